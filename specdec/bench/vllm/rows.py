"""vLLM's measurements as benchmark rows: the columns of `specdec.bench.tables.COLUMNS`, `engine` = "vllm".

A row of ours says how fast one method ran one prompt and how many drafted tokens the target kept.
vLLM's runs say the same in its own terms (`specdec.bench.vllm.counters`): a draft model or n-gram
lookup (`method` "speculative", its pair named 'draft->target [vLLM]' or 'prompt-lookup->target
[vLLM]'), and the target alone (`method` "plain", the baseline of vLLM's speedups: each engine is
compared with itself, so the ratio shows what speculation does inside that engine).

    rows = offline_rows(records, pair="a->b", target="b", ...)        # specdec.bench.vllm.offline
    rows = server_rows(levels, ...)                                   # specdec.bench.vllm.server
    frame = with_vllm_speedups(pd.DataFrame(rows).reindex(columns=COLUMNS))
"""

from __future__ import annotations

import math
from datetime import datetime, timezone

import pandas as pd

from specdec.bench.tables import COLUMNS
from specdec.bench.vllm.counters import SpecCounters
from specdec.registry import LOOKUP  # the draft name of n-gram lookup, as in our own pairs

ENGINE = "vllm"  # rows from vLLM's offline LLM
SERVER_ENGINE = "vllm-server"  # rows from a running vLLM server, one per concurrency level


def pair_label(draft: str | None, target: str) -> str:
    """How a vLLM pair is named in tables and charts.

    >>> pair_label("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"), pair_label(None, "t")
    ('qwen2.5-coder-0.5b->qwen2.5-coder-1.5b [vLLM]', 'prompt-lookup->t [vLLM]')
    """
    return f"{draft or LOOKUP}->{target} [vLLM]"


def measures(counters: SpecCounters, new_tokens: int, wall_time_s: float) -> dict:
    """The speed and acceptance columns of one measurement (one prompt, or one concurrency level).

    >>> row = measures(SpecCounters(drafts=20, draft_tokens=100, accepted=60, accepted_per_pos=(18, 14, 12, 9, 7)), 80,
    ...     4.0)
    >>> row["tokens_per_second"], row["acceptance_rate"], row["mean_acceptance_length"], row["tokens_per_target_pass"]
    (20.0, 0.6, 4.0, 4.0)
    """
    return dict(
        new_tokens=new_tokens,
        wall_time_s=wall_time_s,
        tokens_per_second=new_tokens / wall_time_s if wall_time_s > 0 else math.nan,
        drafted=counters.draft_tokens,
        accepted=counters.accepted,
        rounds=counters.drafts,
        target_passes=counters.drafts,
        acceptance_rate=counters.acceptance_rate,
        alpha_estimate=counters.alpha_estimate,
        mean_acceptance_length=counters.mean_acceptance_length,
        tokens_per_target_pass=counters.mean_acceptance_length,
        mean_accepted_per_round=counters.accepted / counters.drafts if counters.drafts else math.nan,
        mean_gamma=counters.draft_tokens / counters.drafts if counters.drafts else math.nan,
    )


def stamp(**fields) -> dict:
    """A row's common cells: the time, and what was given."""
    return dict(timestamp=datetime.now(timezone.utc).isoformat(timespec="seconds"), **fields)


def with_vllm_speedups(frame: pd.DataFrame) -> pd.DataFrame:
    """Speedup of every vLLM row over vLLM's plain run of the same prompt (offline) or concurrency level (server).

    >>> rows = pd.DataFrame({"pair": ["p", "p"], "target": ["t", "t"], "method": ["plain", "speculative"],
    ...     "prompt_id": ["a", "a"],
    ...                      "temperature": [0.0, 0.0], "repeat": [0, 0], "concurrency": [1, 1],
    ...                      "tokens_per_second": [5.0, 9.0]}).reindex(columns=COLUMNS)
    >>> with_vllm_speedups(rows)["speedup"].tolist()
    [1.0, 1.8]
    """
    frame = frame.reindex(columns=COLUMNS)
    if frame.empty:
        return frame
    key = ["target", "prompt_id", "temperature", "repeat", "concurrency"]
    plain = frame[frame["method"] == "plain"].groupby(key, dropna=False)["tokens_per_second"].median()
    index = pd.MultiIndex.from_frame(frame[key])
    frame["speedup"] = frame["tokens_per_second"].to_numpy() / plain.reindex(index).to_numpy()
    return frame
