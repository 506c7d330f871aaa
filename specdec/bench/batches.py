"""What batching does to the speculative gain: throughput of plain and speculative decoding at each batch size.

Notation: p is the target, q the draft, gamma the drafted tokens per round, c a draft step's cost over a
target step, v(k) a target pass over k tokens in one-token steps.

Every batch size does the same work: the same N prompts (N = the largest batch size), cut into batches
of B (the last one may be smaller), so the numbers differ only by how the work is batched. Per batch
size, plain decoding and speculative decoding (the pair's draft model, chains with the stop rule, one
draft pass per step for the batch) run back to back, in alternating order, in one process:

    throughput   all new tokens / wall time, tokens per second
    gain         speculative throughput / plain throughput at the same batch size
    scaling      speculative throughput at B / at batch 1
    pass cost    seconds per target pass (a batch's pass over all its rows), and the draft's seconds

so the gain can be taken apart as chapter 1 does: tokens per pass per row, over what a verification pass
over B x (gamma + 1) rows costs next to plain decoding's pass over B rows, plus the draft's time.

Greedy rows carry `exact`: whether every row's speculative tokens equal that row's plain tokens.

    frame = batch_benchmark(pair, (1, 2, 4, 8), Decoding(max_new_tokens=128, temperature=0))
    batch_table(frame)
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timezone

import pandas as pd
import torch
import transformers

from specdec.bench.gammas import STOP
from specdec.bench.prompts import encode_bench_prompt, suite
from specdec.engine.inputs import MAX_GAMMA, Decoding
from specdec.errors import SpecdecError
from specdec.kernels.devices import dtype_name
from specdec.pair.resources import LoadedPair
from specdec.pair.running import generate_plain_batch, generate_speculative_batch
from specdec.run_spec import Drafting

MAX_BATCH = 64


def check_batch_sizes(sizes: Sequence[int]) -> tuple[int, ...]:
    """Batch sizes as given, refused when empty, not whole or outside 1..64."""
    if not sizes or any(int(size) != size or not 1 <= size <= MAX_BATCH for size in sizes):
        raise SpecdecError(f"batch sizes must be whole numbers from 1 to {MAX_BATCH}, got {list(sizes)}")
    return tuple(dict.fromkeys(int(size) for size in sizes))


def batch_benchmark(
    pair: LoadedPair,
    batch_sizes: Sequence[int],
    decoding: Decoding,
    prompts: int | None = None,
    progress: Callable[[int, int, str], None] | None = None,
    gammas: Sequence[int | str] = (STOP,),
) -> pd.DataFrame:
    """One row per (batch size, variant): plain, and speculative with each of `gammas` ("stop": the stop rule; a whole
    number: a fixed gamma). See the module docstring. `prompts`: how many (default the largest batch size)."""
    sizes = check_batch_sizes(batch_sizes)
    if not gammas or any(
        gamma != STOP and not (isinstance(gamma, int) and 1 <= gamma <= MAX_GAMMA) for gamma in gammas
    ):
        raise SpecdecError(
            f"a batch benchmark drafts chains: gammas are '{STOP}' or whole numbers from 1 to {MAX_GAMMA}, got "
            f"{list(gammas)}"
        )
    variants = [("plain", None)] + [("speculative", gamma) for gamma in gammas]
    if pair.draft is None or pair.cross_tokenizer:
        raise SpecdecError(
            "the batch benchmark drafts with the pair's draft model sharing the target's tokenizer: pick a draft model "
            "pair"
        )
    count = prompts or max(sizes)
    chosen = suite()[:count]
    if len(chosen) < count:
        raise SpecdecError(f"the prompt suite has {len(chosen)} prompts: ask for at most that many")
    encoded = [encode_bench_prompt(pair.tokenizer, prompt)[0] for prompt in chosen]  # each [T_b]
    generate_speculative_batch(pair, encoded[:2], replace(decoding, max_new_tokens=8))  # warm-up, unrecorded
    rows, total, done = [], len(sizes) * len(variants), 0
    plain_tokens: dict[int, list[list[int]]] = {}
    for index, size in enumerate(sizes):
        order = variants if index % 2 == 0 else variants[::-1]
        for method, gamma in order:
            if progress is not None:
                progress(done, total, f"{method}{'' if gamma is None else f' ({gamma})'} at batch size {size}")
            results = []
            for start in range(0, count, size):
                batch = encoded[start : start + size]
                if method == "plain":
                    results.append(generate_plain_batch(pair, batch, decoding))
                else:
                    results.append(
                        generate_speculative_batch(
                            pair, batch, decoding, Drafting(gamma=None if gamma == STOP else gamma)
                        )
                    )
            rows.append(_row(pair, method, size, results, decoding, gamma))
            if method == "plain":
                plain_tokens[size] = [result.tokens for batch in results for result in batch]
            else:
                rows[-1]["_tokens"] = [result.tokens for batch in results for result in batch]
            done += 1
    if progress is not None:
        progress(done, total, "done")
    for row in rows:  # greedy: every row equal to the same prompt's plain decoding
        if "_tokens" in row:
            row["exact"] = row.pop("_tokens") == plain_tokens[row["batch_size"]] if decoding.temperature == 0 else None
    return with_gains(pd.DataFrame(rows))


def _row(pair: LoadedPair, method: str, size: int, results: list, decoding: Decoding, gamma: int | str | None) -> dict:
    flat = [result for batch in results for result in batch]
    wall = sum(max(result.stats.wall_time_s for result in batch) for batch in results)
    tokens = sum(result.stats.new_tokens for result in flat)
    drafted = sum(result.stats.drafted for result in flat)
    passes = sum(max(result.stats.target_passes for result in batch) for batch in results)  # batched passes
    row_passes = sum(result.stats.target_passes for result in flat)  # passes each row took part in
    return dict(
        timestamp=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        engine="specdec",
        pair=f"{pair.draft_name}->{pair.target_name}",
        draft=pair.draft_name,
        target=pair.target_name,
        method=method,
        schedule="none" if gamma is None else (STOP if gamma == STOP else "fixed"),
        gamma=None if gamma in (None, STOP) else gamma,
        variant=variant_name(method, gamma),
        category="batch",
        prompt_id=f"{len(flat)} prompts",
        batch_size=size,
        concurrency=size,
        prompts=len(flat),
        new_tokens=tokens,
        wall_time_s=wall,
        tokens_per_second=tokens / wall if wall > 0 else None,
        target_passes=passes,
        tokens_per_target_pass=tokens / row_passes if row_passes else None,  # per row, as a single run counts it
        acceptance_rate=sum(result.stats.accepted for result in flat) / drafted if drafted else None,
        verify_time_s=sum(batch[0].stats.verify_time_s for batch in results),
        draft_time_s=sum(batch[0].stats.draft_time_s for batch in results),
        seconds_per_target_pass=sum(batch[0].stats.verify_time_s for batch in results) / passes if passes else None,
        draft_passes=sum(max(result.stats.draft_passes for result in batch) for batch in results),
        exact=None,
        **decoding.as_kwargs(),
        device=str(pair.device),
        dtype=dtype_name(pair.dtype),
        quantization=pair.quantization,
        draft_quantization=pair.draft_quantization,
        torch_version=torch.__version__,
        transformers_version=transformers.__version__,
        python_version=platform.python_version(),
        threads=torch.get_num_threads(),
    )


def variant_name(method: str, gamma: int | str | None) -> str:
    """'plain', 'speculative, stop rule' or 'speculative, gamma 2'.

    >>> variant_name("plain", None), variant_name("speculative", "stop"), variant_name("speculative", 2)
    ('plain', 'speculative, stop rule', 'speculative, gamma 2')
    """
    if method == "plain":
        return "plain"
    return f"{method}, {'stop rule' if gamma == STOP else f'gamma {gamma}'}"


def with_gains(frame: pd.DataFrame) -> pd.DataFrame:
    """Add `speedup` (throughput over plain decoding's at the same batch size; 1 for plain) and `scaling` (over the
    same variant at the smallest batch size)."""
    frame = frame.copy()
    plain = frame[frame["method"] == "plain"].set_index(["pair", "batch_size"])["tokens_per_second"]
    frame["speedup"] = [
        row.tokens_per_second / plain.get((row.pair, row.batch_size), float("nan")) for row in frame.itertuples()
    ]
    first = frame[frame["batch_size"] == frame["batch_size"].min()].set_index(["pair", "variant"])["tokens_per_second"]
    frame["scaling"] = [
        row.tokens_per_second / first.get((row.pair, row.variant), float("nan")) for row in frame.itertuples()
    ]
    return frame


def batch_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per pair, batch size and variant: throughput, the gain over plain decoding of the same batch, the scaling over
    the smallest batch, tokens per target pass per row, a verification pass over a plain pass, and exactness.

    Empty when the frame has no batch rows.
    """
    if "batch_size" not in frame.columns or frame["batch_size"].isna().all():
        return pd.DataFrame()
    rows = frame[frame["batch_size"].notna() & (frame["engine"] == "specdec")].copy()
    plain_pass = rows[rows["method"] == "plain"].set_index(["pair", "batch_size"])["seconds_per_target_pass"]
    rows["pass_over_plain"] = [
        row.seconds_per_target_pass / plain_pass.get((row.pair, row.batch_size), float("nan"))
        for row in rows.itertuples()
    ]
    rows["batch_size"] = rows["batch_size"].astype(int)
    table = rows[
        [
            "pair",
            "batch_size",
            "variant",
            "tokens_per_second",
            "speedup",
            "scaling",
            "tokens_per_target_pass",
            "pass_over_plain",
            "exact",
        ]
    ]
    return (
        table.rename(columns={"tokens_per_second": "tok_s", "speedup": "gain"})
        .sort_values(["pair", "batch_size", "variant"])
        .reset_index(drop=True)
    )
