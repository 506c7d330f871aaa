"""The command line: `specdec toy`, `run`, `bench`, `models`, `heads` and `runtime`.

    specdec toy                                   # is the accept/reject rule exact? 200k trials
    specdec toy --target 0.3,0.4,0.3 --draft 0.6,0.2,0.2 --theory
    specdec run --target ./big-model --draft ./small-model --prompt "def fib(n):" --temperature 0 --compare

Bad input prints one line on stderr and exits with code 2, never a traceback. All the work is
done by the package; the CLI only parses (`parser`), loads, calls and prints (`commands`, `run`, `bench`, `heads`).
torch is imported only by the commands that need it, so `specdec toy` starts fast.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from specdec.cli import commands
from specdec.cli.bench import bench
from specdec.cli.heads import heads
from specdec.cli.run import run
from specdec.cli.parser import build_parser
from specdec.errors import SpecdecError

COMMANDS = {
    "toy": commands.toy,
    "run": run,
    "bench": bench,
    "models": commands.models,
    "heads": heads,
    "runtime": commands.runtime,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `specdec` and `python -m specdec`; returns the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(argv[0] if argv else None).parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except SpecdecError as error:
        print(f"specdec: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("specdec: interrupted", file=sys.stderr)
        return 130


__all__ = ["build_parser", "main"]
