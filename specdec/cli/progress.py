"""Progress on stderr, shared by the commands that load models (`commands.py`, `run.py`, `bench.py`): a line per
message, and a line per long loading stage every few seconds. Reports go to stdout, so `specdec run --json > out.json`
stays clean."""

from __future__ import annotations

import sys
import time


def say(message: str) -> None:
    """One line of progress on stderr, at once (reports go to stdout)."""
    print(message, file=sys.stderr, flush=True)


class LoadSteps:
    """A line on stderr for a long loading stage every few seconds and when it ends (GGUF tensors have transformers'
    bar); a stage over in under `every_s` (reading the tokenizers of converted copies) prints nothing."""

    every_s = 5.0

    def __init__(self) -> None:
        self.last: dict[str, float] = {}

    def __call__(self, step) -> None:
        if step.stage == "dequantizing GGUF tensors" or not step.total:
            return
        now = time.monotonic()
        due = now - self.last.setdefault(step.stage, now) >= self.every_s
        if due or (step.done == step.total and step.elapsed_s >= self.every_s):
            self.last[step.stage] = now
            say(step.describe())
