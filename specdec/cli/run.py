"""`specdec run`: one prompt through a pair as the planner plans it, the target alone beside it with --compare, a
report.

The report's first line is the plan's header (`specdec.planner.Plan.header`), the line the Playground shows and `specdec
bench` prints for the same run spec; it is printed on stderr too before the run starts.
"""

from __future__ import annotations

import argparse
import json

from specdec.cli.progress import LoadSteps as _LoadSteps
from specdec.cli.progress import say as _progress
from specdec.errors import SpecdecError


def run_spec(args: argparse.Namespace):
    """The `RunSpec` `specdec run`'s arguments describe (`--tree` and `--tree-budget` are the tree method and its
    budget), checked before anything loads."""
    from specdec.engine.inputs import Decoding
    from specdec.registry import TREE
    from specdec.run_spec import Drafting, ModelChoices, RunSpec

    method, options = args.method, dict(_options(args.option))
    if args.tree or args.tree_budget is not None:
        if method not in (None, TREE):
            raise SpecdecError(f"--tree drafts with the {TREE} method, --method asked for {method}: drop one")
        method = TREE
        if args.tree_budget is not None:
            options["budget"] = str(args.tree_budget)
    if not args.prompt.strip():
        raise SpecdecError("the prompt is empty: pass some text with --prompt")
    models = ModelChoices(
        args.device,
        args.dtype,
        args.quantization,
        args.draft_quantization,
        args.runtime,
        draft_runtime=args.draft_runtime,
    )
    drafting = Drafting(method, args.gamma, tuple(options.items()), tuple(args.corpus or ()))
    decoding = Decoding(args.max_new_tokens, args.temperature, args.top_k, args.top_p, args.seed)
    return RunSpec(args.target, args.draft, models, drafting, decoding).check()


def _options(texts: list[str] | None) -> list[tuple[str, str]]:
    """`--option NAME=VALUE` pairs, in order (one clear line for one without '=')."""
    pairs = []
    for text in texts or ():
        name, equals, value = text.partition("=")
        if not equals or not name.strip():
            raise SpecdecError(f"--option takes NAME=VALUE (a field of the method's options), got '{text}'")
        pairs.append((name.strip(), value.strip()))
    return pairs


def run(args: argparse.Namespace) -> int:
    """`specdec run`: one prompt through a real pair, with the target alone beside it when --compare."""
    spec = run_spec(args)  # refuse bad choices before loading anything

    from specdec.pair import loading, running

    pair = loading.load_spec(spec, progress=_progress, steps=_LoadSteps())
    plan = pair.plan(spec)
    _progress(f"Plan: {plan.header()}")
    input_ids = running.encode_prompt(pair.tokenizer, args.prompt, chat=args.chat)
    result = running.generate(pair, input_ids, spec, plan=plan)
    baseline = running.generate_plain(pair, input_ids, spec.decoding) if args.compare else None
    check = None
    if baseline is not None and spec.decoding.sampling.greedy:
        from specdec.bench.comparison import greedy_check_of_pair

        check = greedy_check_of_pair(pair, input_ids, result.tokens, baseline.tokens)
    text = pair.tokenizer.decode(result.tokens, skip_special_tokens=True)

    if args.json:
        print(json.dumps(_report_json(args, pair, text, result, baseline), indent=2))
    else:
        print(_report_text(pair, text, result, baseline, check, gamma=args.gamma))
    return 0


def _report_json(args, pair, text, result, baseline) -> dict:
    from specdec.bench.comparison import RunComparison
    from specdec.kernels.devices import dtype_name

    report = {
        "target": args.target,
        "draft": args.draft,
        "device": str(pair.device),
        "dtype": dtype_name(pair.dtype),
        "precision": {"target": pair.precision, "draft": pair.draft_precision},
        "precision_details": {
            role: precision.to_dict()
            for role in ("target", "draft")
            if (precision := pair.precision_of(role)) is not None
        },
        "runtime": {planned.role: planned.runtime for planned in pair.models if planned is not None},
        "plan": result.plan,
        "draft_tokenizer": pair.tokenizer_note,
        "settings": {
            key: getattr(args, key)
            for key in (
                "gamma",
                "max_new_tokens",
                "temperature",
                "top_k",
                "top_p",
                "seed",
                "chat",
                "dtype",
                "quantization",
                "draft_quantization",
                "method",
                "runtime",
            )
        }
        | {"drafting": result.drafting, "drafted_by_default": result.by_default},
        "text": text,
        "tokens": result.tokens,
        "stats": result.stats.to_dict(),
        "costs": {"c": result.draft_cost_ratio, "measured_v": list(result.verify_costs[:17])},
    }
    if baseline is not None:
        report["compare"] = {
            "target_alone_stats": baseline.stats.to_dict(),
            "wall_clock_speedup": RunComparison(result.stats, baseline.stats, args.gamma).wall_clock_speedup,
            "identical_tokens": baseline.tokens == result.tokens,
        }
    return report


def _measured_lines(pair, result) -> list[str]:
    """What was measured on this machine at load, said of the model it was measured for: the pair's draft model's c, and
    the c the run priced its rounds with when it drafted otherwise (a model-free method: 0)."""
    if pair.costs is None:
        return []
    v = " ".join(f"{value:.2f}" for value in result.verify_costs[1:9])
    lines = [
        f"Measured here: a target step {pair.costs.target_step_s * 1e3:.0f} ms, v(k) for k = 1..8: {v} target steps"
        + (f" ({pair.costs.measured_under})" if pair.costs.measured_under else "")
    ]
    for passes, ratio in (pair.costs_off or {}).items():
        lines.append(
            f"This run's {passes} passes took {ratio:.2f}x what the kept costs predict: they are timed again at the "
            "next load"
        )
    if pair.draft is not None:
        used = (
            ""
            if result.draft_cost_ratio == pair.costs.c
            else f"; this run drafted without it: c = {result.draft_cost_ratio:.2f}"
        )
        catch_up = (
            f"; a pass over two tokens {pair.costs.draft_pair_s * 1e3:.0f} ms, what it reads after a round that kept "
            f"every draft (catch-up {pair.costs.catch_up:.2f} target steps)"
            if pair.costs.draft_pair_s
            else ""
        )
        lines.append(
            f"Measured here: the draft {pair.draft_name}'s step {pair.costs.draft_step_s * 1e3:.0f} ms, "
            f"c = {pair.costs.c:.2f}{catch_up}{used}"
        )
    return lines


def _report_text(pair, text, result, baseline, check, gamma: int | None) -> str:
    from specdec.bench.comparison import RunComparison

    stats = result.stats
    acceptance = "n/a (nothing drafted)" if stats.drafted == 0 else f"{stats.acceptance_rate:.1%}"
    tested = stats.accepted + stats.rejections
    alpha = "n/a (nothing tested)" if tested == 0 else f"{stats.alpha_estimate:.1%}"
    lines = [
        f"Plan: {result.plan}" + (f"   draft tokenizer: {pair.tokenizer_note}" if pair.cross_tokenizer else ""),
        f"Kernels: {pair.kernels}",
        *_measured_lines(pair, result),
        "--- OUTPUT ---",
        text,
        "--- STATS ---",
        f"avg tokens per target pass: {stats.tokens_per_target_pass:.2f}   "
        "(tokens decided per target pass, not a speedup: --compare times one)",
        f"acceptance rate (accepted/drafted): {acceptance}   ({stats.accepted} of {stats.drafted} drafted tokens "
        "accepted)",
        f"alpha (accepted/tested): {alpha}   ({stats.accepted} of {tested} tested; drafts after a rejection are never "
        "tested: this estimates the formulas' alpha)",
        *(
            [
                f"tree: {stats.drafted / max(stats.target_passes - 1, 1):.1f} nodes per round on average, "
                f"{stats.accepted / max(stats.target_passes - 1, 1):.2f} accepted; "
                f"{stats.drafted - stats.accepted - stats.rejections} drafted nodes unused (the branches off the kept "
                "path)"
            ]
            if any(r.tree for r in result.rounds)
            else []
        ),
        f"new tokens: {stats.new_tokens}   target passes: {stats.target_passes}   draft passes: {stats.draft_passes}",
        f"time: {stats.wall_time_s:.2f} s   (draft {stats.draft_time_s:.2f} s, verify {stats.verify_time_s:.2f} s, "
        f"other {stats.other_time_s:.2f} s)   {stats.tokens_per_second:.1f} tokens/s",
    ]
    if baseline is not None:
        lines += [
            "--- COMPARE ---",
            f"target alone: {baseline.stats.wall_time_s:.2f} s   {baseline.stats.tokens_per_second:.1f} tokens/s",
            f"wall-clock speedup: {RunComparison(stats, baseline.stats, gamma).wall_clock_speedup:.2f}x",
        ]
        if check is not None:
            lines.append(
                f"identical to the target's own greedy output: {'yes' if check.identical else 'no, ' + check.message}"
            )
    return "\n".join(lines)
