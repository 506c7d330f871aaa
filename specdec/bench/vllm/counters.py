"""vLLM's speculative-decoding counters, and what our measures are in their terms.

vLLM counts, since it started, for every verification of a draft (summed over all requests):

    drafts              vllm:spec_decode_num_drafts            rounds that verified a draft
    draft_tokens        vllm:spec_decode_num_draft_tokens      tokens drafted (gamma per round)
    accepted            vllm:spec_decode_num_accepted_tokens   drafted tokens the target kept
    accepted_per_pos[i] vllm:spec_decode_num_accepted_tokens_per_pos{position="i"}
                                                              rounds that kept the draft's token i

A server shows them as Prometheus text on /metrics (counters end in `_total` there); the offline
`LLM.get_metrics()` gives the same names without the suffix. Counters only grow, so what one
experiment did is the difference of two readings (`SpecCounters.minus`). In our notation:

    acceptance_rate        = accepted / draft_tokens             (our `acceptance_rate`)
    mean_acceptance_length = 1 + accepted / drafts               (tokens per target pass: each
                                                                   verification adds one of its own)
    alpha_estimate         = accepted / tested, tested = accepted + rounds that rejected a token
                           = accepted + drafts - accepted_per_pos[gamma - 1]

>>> before = SpecCounters(drafts=10, draft_tokens=40, accepted=30, accepted_per_pos=(9, 8, 7, 6))
>>> after = SpecCounters(drafts=30, draft_tokens=120, accepted=70, accepted_per_pos=(27, 18, 14, 11))
>>> run = after.minus(before)
>>> run.drafts, run.accepted, run.acceptance_rate, run.mean_acceptance_length
(20, 40, 0.5, 3.0)
>>> round(run.alpha_estimate, 4)       # 40 accepted out of 40 + (20 - 5) tested
0.7273

Nothing here does I/O: `specdec.bench.vllm.server` fetches the text, `worker.py` the metrics.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from specdec.errors import SpecdecError

PREFIX = "vllm:spec_decode_"
NAMES = {
    "drafts": PREFIX + "num_drafts",
    "draft_tokens": PREFIX + "num_draft_tokens",
    "accepted": PREFIX + "num_accepted_tokens",
}
PER_POSITION = PREFIX + "num_accepted_tokens_per_pos"

# name{label="value",...} number [timestamp]  (the Prometheus text format, one sample per line)
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)(\s+\S+)?$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class SpecCounters:
    """One reading (or the difference of two) of vLLM's spec-decode counters."""

    drafts: int = 0
    draft_tokens: int = 0
    accepted: int = 0
    accepted_per_pos: tuple[int, ...] = ()  # [i]: rounds whose draft token i was kept (i = 0 .. gamma - 1)

    def minus(self, earlier: SpecCounters) -> SpecCounters:
        """What happened between `earlier` and this reading; a counter that went down means the server restarted."""
        width = max(len(self.accepted_per_pos), len(earlier.accepted_per_pos))
        mine, theirs = _padded(self.accepted_per_pos, width), _padded(earlier.accepted_per_pos, width)
        difference = SpecCounters(
            self.drafts - earlier.drafts,
            self.draft_tokens - earlier.draft_tokens,
            self.accepted - earlier.accepted,
            tuple(a - b for a, b in zip(mine, theirs)),
        )
        if (
            min(
                (difference.drafts, difference.draft_tokens, difference.accepted) + difference.accepted_per_pos,
                default=0,
            )
            < 0
        ):
            raise SpecdecError(
                "vLLM's spec-decode counters went down between two readings: the server restarted during "
                "the experiment; run it again"
            )
        return difference

    @property
    def acceptance_rate(self) -> float:
        """accepted / drafted (NaN when nothing was drafted)."""
        return self.accepted / self.draft_tokens if self.draft_tokens else math.nan

    @property
    def mean_acceptance_length(self) -> float:
        """Tokens per verification pass: the accepted ones plus the one the target adds (NaN without a draft)."""
        return 1 + self.accepted / self.drafts if self.drafts else math.nan

    @property
    def alpha_estimate(self) -> float:
        """accepted / tested: a round tests its tokens up to the first rejection, all of them when none is rejected."""
        if not self.drafts or not self.accepted_per_pos:
            return math.nan
        rejections = self.drafts - self.accepted_per_pos[-1]
        tested = self.accepted + rejections
        return self.accepted / tested if tested else math.nan


def _padded(values: tuple[int, ...], width: int) -> tuple[int, ...]:
    return tuple(values) + (0,) * (width - len(values))


def parse_prometheus(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Every sample of a Prometheus text page: {name: [(labels, value), ...]}. A line that is not a sample is an error.

    >>> page = '# TYPE x counter\\nx_total{position="0",model_name="m"} 3.0\\nup 1\\n'
    >>> parse_prometheus(page)
    {'x_total': [({'position': '0', 'model_name': 'm'}, 3.0)], 'up': [({}, 1.0)]}
    """
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        try:
            value = float(match.group(3)) if match else None
        except ValueError:
            value = None
        if match is None or value is None:
            raise SpecdecError(
                f"the metrics page is not Prometheus text (line {number}: '{line[:60]}'): point --server at a "
                "vLLM server, whose /metrics it reads"
            )
        samples.setdefault(match.group(1), []).append((dict(_LABEL.findall(match.group(2) or "")), value))
    return samples


def counters_from_prometheus(text: str, model: str | None = None) -> SpecCounters:
    """The spec-decode counters on a server's /metrics page, summed over engines (only `model`'s when given).

    A page without them is an error: the server runs no speculative decoding, or it is not vLLM.

    >>> page = '''vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 4.0
    ... vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 12.0
    ... vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 9.0
    ... vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} 4.0
    ... vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="1"} 3.0
    ... vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="2"} 2.0
    ... '''
    >>> counters_from_prometheus(page)
    SpecCounters(drafts=4, draft_tokens=12, accepted=9, accepted_per_pos=(4, 3, 2))
    """
    samples = parse_prometheus(text)

    def mine(name: str) -> list[tuple[dict[str, str], float]]:
        return [
            (labels, value)
            for labels, value in samples.get(name + "_total", samples.get(name, []))
            if model is None or labels.get("model_name", model) == model
        ]

    if not mine(NAMES["drafts"]):
        raise SpecdecError(
            f"the metrics page has no {NAMES['drafts']} counter: start the vLLM server with "
            "--speculative-config (and without --disable-log-stats)"
        )
    totals = {key: round(sum(value for _, value in mine(name))) for key, name in NAMES.items()}
    positions: dict[int, float] = {}
    for labels, value in mine(PER_POSITION):
        if not labels.get("position", "").isdigit():
            raise SpecdecError(f"the metrics page has a {PER_POSITION} sample without a position label: is this vLLM?")
        positions[int(labels["position"])] = positions.get(int(labels["position"]), 0) + value
    return SpecCounters(
        **totals, accepted_per_pos=tuple(round(positions.get(i, 0)) for i in range(max(positions, default=-1) + 1))
    )


def counters_from_metrics(metrics: list[dict]) -> SpecCounters:
    """The counters of `LLM.get_metrics()`, as `worker.py` passes them on: [{"name", "value"} or {"name", "values"}].

    >>> counters_from_metrics([{"name": "vllm:spec_decode_num_drafts", "value": 2},
    ...                        {"name": "vllm:spec_decode_num_draft_tokens", "value": 6},
    ...                        {"name": "vllm:spec_decode_num_accepted_tokens", "value": 5},
    ...                        {"name": "vllm:spec_decode_num_accepted_tokens_per_pos", "values": [2, 2, 1]}])
    SpecCounters(drafts=2, draft_tokens=6, accepted=5, accepted_per_pos=(2, 2, 1))
    """
    totals = dict.fromkeys(NAMES, 0)
    positions: list[float] = []
    for metric in metrics:
        for key, name in NAMES.items():
            if metric.get("name") == name:
                totals[key] += round(metric.get("value", 0))
        if metric.get("name") == PER_POSITION:
            values = tuple(metric.get("values", ()))
            width = max(len(values), len(positions))
            positions = [a + b for a, b in zip(_padded(tuple(positions), width), _padded(values, width))]
    return SpecCounters(**totals, accepted_per_pos=tuple(round(value) for value in positions))
