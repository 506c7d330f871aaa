"""Training a head for a target by name: the data, the target, checkpoints and resume; what the CLI and the dashboard
share.

    run = train_for_target("qwen2.5-coder-1.5b", minutes=30)          # ShareGPT, checkpoints in the cache
    run.folder, run.history[-1]                                         # where the head is; the last step's numbers
    speculative_generate(target, EagleDrafter(run.head), ...)           # or: specdec run --draft eagle

The data is ShareGPT (`specdec.zoo.sharegpt`), each conversation through the target's chat template,
teacher-forced: one target pass per chunk gives the features and the soft labels
(`specdec.heads.training`). A checkpoint (`specdec.heads.files.save_head`: the head, AdamW's state,
the progress so far, checksummed) is written every few minutes and when the run ends or is stopped;
`resume=True` goes on from the folder's checkpoint (same head, same optimizer, the step it reached).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
from transformers import PreTrainedTokenizerBase

from specdec.heads.head import EagleHead
from specdec.heads.files import heads_dir, load_head, load_training, save_head
from specdec.heads.training import TrainingSettings, train_head
from specdec.pair.resources import LoadedPair
from specdec.pair.loading import load_pair
from specdec.registry import FREE_DRAFT
from specdec.runtime import transformers_model
from specdec.store import Progress, check_run_length

CONVERSATIONS = 800  # conversations read by default: about a million tokens, more than an hour on a 2-core CPU reads
MAX_TOKENS = 1024  # tokens kept of each conversation


@dataclass
class HeadRun:
    """A finished (or stopped) training run: the head, where it is saved, and every step's progress."""

    head: EagleHead
    folder: Path
    history: list[Progress] = field(default_factory=list)  # each step's report, its `numbers` the step's measurements
    resumed_from: int = 0  # the step a checkpoint had reached (0: a fresh head)


def training_sequences(
    tokenizer: PreTrainedTokenizerBase, conversations: Iterable[Sequence[tuple[str, str]]], max_tokens: int = MAX_TOKENS
) -> list[torch.Tensor]:
    """Each conversation's token ids [T <= max_tokens] in the
    tokenizer's chat template (plain text when it has none)."""
    sequences = []
    for turns in conversations:
        messages = [{"role": role, "content": text} for role, text in turns]
        if getattr(tokenizer, "chat_template", None):
            ids = tokenizer.apply_chat_template(messages, tokenize=True)
            ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
        else:
            ids = tokenizer("\n".join(text for _, text in turns)).input_ids
        if len(ids) >= 3:
            sequences.append(torch.tensor(ids[:max_tokens], dtype=torch.long))
    return sequences


def history_rows(history: Sequence[Progress]) -> list[dict]:
    """The progress of every step as plain rows (for a checkpoint's
    progress.json and the acceptance-by-minutes curve)."""
    return [
        {
            "step": p.numbers["step"],
            "tokens": p.numbers["tokens"],
            "minutes": round(p.elapsed_s / 60, 3),
            "loss": round(p.numbers["loss"], 4),
            "accuracy": round(p.numbers["accuracy"], 4),
        }
        for p in history
    ]


def train_pair_head(
    pair: LoadedPair,
    sequences: Sequence[torch.Tensor],
    folder: Path,
    *,
    minutes: float | None = None,
    steps: int | None = None,
    resume: bool = True,
    seed: int = 0,
    settings: TrainingSettings = TrainingSettings(),
    progress: Callable[[Progress], None] | None = None,
    stop: Callable[[], bool] | None = None,
    checkpoint_every_s: float = 300.0,
    snapshots: str | Path | None = None,
) -> HeadRun:
    """Train (or go on training) the head in `folder` for `pair.target` on `sequences`, saving checkpoints there.

    `snapshots`: also keep each checkpoint's head in `snapshots/<minutes>min` (to measure what more training buys)."""
    folder = Path(folder)
    head, optimizer_state, start, earlier = _checkpoint(pair, folder, resume)
    run = HeadRun(head, folder, resumed_from=start)  # type: ignore[arg-type]  (the head is set when training returns)

    def seen(report: Progress) -> None:
        run.history.append(report)
        if progress is not None:
            progress(report)

    run.head = train_head(
        pair.target,
        sequences,
        steps=steps,
        minutes=minutes,
        seed=seed,
        head=head,
        settings=settings,
        progress=seen,
        stop=stop,
        checkpoint=_checkpoint_writer(run, earlier, snapshots),
        checkpoint_every_s=checkpoint_every_s,
        optimizer_state=optimizer_state,
        start_step=start,
        name=pair.target_name,
    )
    return run


def _checkpoint(pair: LoadedPair, folder: Path, resume: bool) -> tuple[EagleHead | None, dict | None, int, list[dict]]:
    """What `folder`'s checkpoint goes on from: the head, AdamW's state, the step it reached and the history rows so far
    (a fresh head's None, None, 0, [] when `resume` is off or the folder holds no checkpoint)."""
    found = load_training(folder) if resume else None
    if found is None:
        return None, None, 0, []
    done, optimizer_state = found
    return (
        load_head(folder, transformers_model(pair.target, "training a head")),
        optimizer_state,
        int(done["step"]),
        done.get("history", []),
    )


def _checkpoint_writer(
    run: HeadRun, earlier: list[dict], snapshots: str | Path | None
) -> Callable[[EagleHead, Progress, torch.optim.Optimizer], None]:
    """What training calls to save a checkpoint into `run.folder`: the head, AdamW's state and the progress, the
    `earlier` run's history rows first (this run's minutes counted on from where it stopped); a snapshot too when
    asked."""
    offset = earlier[-1]["minutes"] * 60 if earlier else 0.0

    def write(trained: EagleHead, report: Progress, optimizer: torch.optim.Optimizer) -> None:
        rows = earlier + [
            row | {"minutes": round(row["minutes"] + offset / 60, 3)} for row in history_rows(run.history)
        ]
        done = report.numbers
        save_head(
            trained,
            run.folder,
            training={
                "step": done["step"],
                "tokens": done["tokens"] + (earlier[-1]["tokens"] if earlier else 0),
                "history": rows,
            },
            optimizer=optimizer.state_dict(),
        )
        if snapshots is not None:
            save_head(trained, Path(snapshots) / f"{rows[-1]['minutes']:05.1f}min")

    return write


def train_for_target(
    target_name: str,
    *,
    minutes: float | None = None,
    steps: int | None = None,
    out: str | Path | None = None,
    resume: bool = True,
    conversations: int = CONVERSATIONS,
    seed: int = 0,
    device: str = "auto",
    quantization: str = "auto",
    progress: Callable[[Progress], None] | None = None,
    stop: Callable[[], bool] | None = None,
    say: Callable[[str], None] | None = None,
    checkpoint_every_s: float = 300.0,
    snapshots: str | Path | None = None,
) -> HeadRun:
    """Load `target_name`, read ShareGPT, train its head for
    `minutes` (and/or `steps`) into `out` (default: the cache)."""
    from specdec.zoo.sharegpt import fetch_sharegpt, read_conversations

    check_run_length(minutes, steps)
    say = say or (lambda message: None)
    folder = Path(out) if out is not None else heads_dir() / Path(target_name).name
    # the target alone loads
    pair = load_pair(target_name, FREE_DRAFT, device, "auto", progress=say, quantization=quantization)
    say("Reading ShareGPT …")
    data = fetch_sharegpt()
    sequences = training_sequences(pair.tokenizer, read_conversations(data, limit=conversations))
    say(f"{len(sequences)} conversations, {sum(s.numel() for s in sequences):,} tokens; training into {folder}")
    return train_pair_head(
        pair,
        sequences,
        folder,
        minutes=minutes,
        steps=steps,
        resume=resume,
        seed=seed,
        progress=progress,
        stop=stop,
        checkpoint_every_s=checkpoint_every_s,
        snapshots=snapshots,
    )
