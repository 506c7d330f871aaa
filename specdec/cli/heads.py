"""`specdec heads train`: train an EAGLE-3 head for a target, with a progress line, Ctrl-C to stop and keep the
checkpoint.

specdec heads train --target qwen2.5-coder-1.5b --minutes 30          # into the cache: then `specdec run --draft eagle`
specdec heads train --target qwen2.5-coder-1.5b --minutes 30 --out heads/qwen   # a folder vLLM can load as an eagle3
draft
"""

from __future__ import annotations

import argparse
import signal
import sys

from specdec.store import check_run_length


def heads(args: argparse.Namespace) -> int:
    """`specdec heads train`: load the target, read ShareGPT,
    train, save; one line per checkpointable step on stderr."""
    check_run_length(args.minutes, args.steps, ("--minutes", "--steps"))  # before the target loads
    from specdec.head_training import train_for_target

    stopping = {"asked": False}

    def interrupted(signum, frame) -> None:
        if stopping["asked"]:
            raise KeyboardInterrupt
        stopping["asked"] = True
        print(
            "\nstopping after this step (the checkpoint is kept); Ctrl-C again to quit at once",
            file=sys.stderr,
            flush=True,
        )

    previous = signal.signal(signal.SIGINT, interrupted)
    try:
        run = train_for_target(
            args.target,
            minutes=args.minutes,
            steps=args.steps,
            out=args.out,
            resume=not args.fresh,
            conversations=args.conversations,
            seed=args.seed,
            device=args.device,
            quantization=args.quantization,
            checkpoint_every_s=args.checkpoint_minutes * 60,
            snapshots=args.snapshots,
            progress=_bar,
            stop=lambda: stopping["asked"],
            say=lambda message: print(message, file=sys.stderr, flush=True),
        )
    finally:
        signal.signal(signal.SIGINT, previous)
    last = run.history[-1] if run.history else None
    print(f"head: {run.folder}" + (f"   (went on from step {run.resumed_from})" if run.resumed_from else ""))
    if last is not None:
        done = last.numbers
        print(
            f"trained: {done['step']} steps, {done['tokens']:,} tokens in {last.elapsed_s / 60:.1f} min; last loss "
            f"{done['loss']:.3f}, "
            f"top-1 agreement {done['accuracy']:.0%}"
        )
    print(f"use it: specdec run --target {args.target} --draft {run.folder}")
    print(
        f"in vLLM (a GPU): vllm serve <the target's hub id> --speculative-config "
        f'\'{{"method": "eagle3", "model": "{run.folder}", "num_speculative_tokens": 4}}\''
    )
    return 0


def _bar(report) -> None:
    end = "" if sys.stderr.isatty() else "\n"
    if sys.stderr.isatty() or report.done % 10 == 0 or report.done == 1:
        print(f"\r{report.describe():<100}", end=end, file=sys.stderr, flush=True)
