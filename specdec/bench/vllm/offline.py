"""The benchmark's prompt suite through vLLM's offline `LLM`, next to our own runs.

    python = find_vllm_python()                                   # .venv-vllm/bin/python, or one line saying how
    frame = run_vllm_benchmark(["qwen2.5-coder-0.5b->qwen2.5-coder-1.5b", "prompt-lookup->qwen2.5-coder-1.5b"],
                               VllmSettings(gammas=(5,), prompts_per_category=1), python)

vLLM pins other transformers versions than the app, so it lives in its own environment
(`requirements-vllm.txt`) and runs as a separate process: `worker.py`, started with that
environment's Python, one JSON job in, JSON lines out (`specdec.bench.vllm.worker_process`). Both engines see the same
token ids: the prompts are encoded here with the target's tokenizer, as `specdec bench` encodes them.

Per target, vLLM runs the target alone ("plain", the baseline of its speedups), then each draft
model at each gamma, then n-gram lookup (a pair whose draft is `prompt-lookup`) at each gamma.
vLLM reads safetensors folders: a zoo model is given as its bfloat16 converted copy (made on
first use, as `specdec run --dtype bfloat16 --quantization none` would).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from specdec.bench.prompts import encode_bench_prompt, suite
from specdec.bench.vllm.counters import counters_from_metrics
from specdec.bench.vllm.rows import ENGINE, LOOKUP, measures, pair_label, stamp, with_vllm_speedups
from specdec.bench.vllm.worker_process import run_worker
from specdec.errors import SpecdecError
from specdec.zoo.catalog import split_pair_name


@dataclass(frozen=True)
class VllmSettings:
    """What vLLM runs: fixed gammas (vLLM drafts a fixed number of tokens), prompts, decoding, engine options."""

    gammas: tuple[int, ...] = (5,)
    categories: tuple[str, ...] | None = None
    prompts_per_category: int | None = None
    max_new_tokens: int = 128
    temperature: float = 0.0
    seed: int = 0
    warmup: int = 1
    enforce_eager: bool = True  # skips vLLM's compilation, minutes at every start on a CPU (see the README)
    kv_cache_gib: int = 4  # VLLM_CPU_KVCACHE_SPACE on a CPU

    def __post_init__(self) -> None:
        if not self.gammas or any(not isinstance(gamma, int) or not 1 <= gamma <= 32 for gamma in self.gammas):
            raise SpecdecError(
                f"vLLM drafts a fixed number of tokens per round: pass whole gammas from 1 to 32 "
                f"(--gammas 5), got {list(self.gammas)}"
            )


def vllm_model_folder(name: str) -> str:
    """A folder vLLM can load for `name`: a zoo model's bfloat16
    converted copy (made when missing), or a local folder."""
    import torch

    from specdec.zoo import converted
    from specdec.zoo.catalog import resolve_model

    entry = resolve_model(name)
    if entry is not None:
        folder = converted.find_converted(entry, torch.bfloat16)
        if folder is None:
            from specdec.zoo.loading import load_model

            load_model(name, device="cpu", dtype="bfloat16", quantization="none")  # writes the converted copy
            folder = converted.find_converted(entry, torch.bfloat16)
        if folder is not None:
            return str(folder)
    if Path(name).is_dir() and (Path(name) / "config.json").exists():
        return str(Path(name).resolve())
    raise SpecdecError(
        f"vLLM needs a model folder (config.json and safetensors) or a zoo name, got '{name}': see "
        "`specdec models list`"
    )


def vllm_job(
    target: str, draft: str | None, lookup: bool, prompts: list[dict], settings: VllmSettings, plain: bool = True
) -> dict:
    """The worker's job for one target: plain (unless `plain` is False), then the draft model and/or n-gram lookup at
    each gamma.

    >>> job = vllm_job("/m/t", "/m/d", True, [{"id": "code-1", "token_ids": [1, 2]}], VllmSettings(gammas=(3, 5)))
    >>> [(v["name"], v.get("gamma")) for v in job["variants"]]
    [('plain', None), ('draft', 3), ('draft', 5), ('ngram', 3), ('ngram', 5)]
    """
    variants = [{"name": "plain"}] if plain else []
    variants += [{"name": "draft", "gamma": gamma} for gamma in settings.gammas if draft is not None]
    variants += [
        {"name": "ngram", "gamma": gamma, "ngram_min": 1, "ngram_max": 3} for gamma in settings.gammas if lookup
    ]
    return dict(
        target=target,
        draft=draft,
        dtype="bfloat16",
        enforce_eager=settings.enforce_eager,
        max_new_tokens=settings.max_new_tokens,
        temperature=settings.temperature,
        seed=settings.seed,
        warmup=settings.warmup,
        kv_cache_gib=settings.kv_cache_gib,
        variants=variants,
        prompts=prompts,
    )


def offline_rows(
    records: list[dict],
    draft: str | None,
    target: str,
    prompts: dict[str, tuple[str, int]],
    settings: VllmSettings,
    version: str,
) -> list[dict]:
    """The worker's row events as benchmark rows; `prompts` gives each prompt id its (category, prompt tokens)."""
    rows = []
    plain = {record["prompt_id"]: record["token_ids"] for record in records if record["variant"] == "plain"}
    for record in records:
        counters = counters_from_metrics(record["counters_after"]).minus(
            counters_from_metrics(record["counters_before"])
        )
        speculative = record["variant"] != "plain"
        pair = pair_label(None if record["variant"] == "ngram" else draft, target)
        category, prompt_tokens = prompts[record["prompt_id"]]
        rows.append(
            stamp(
                engine=ENGINE,
                engine_version=version,
                pair=pair,
                draft=LOOKUP if record["variant"] == "ngram" else draft,
                target=target,
                method="speculative" if speculative else "plain",
                schedule="fixed" if speculative else "none",
                gamma=record["gamma"],
                category=category,
                prompt_id=record["prompt_id"],
                temperature=settings.temperature,
                top_k=0,
                top_p=1.0,
                repeat=0,
                seed=settings.seed,
                max_new_tokens=settings.max_new_tokens,
                prompt_tokens=prompt_tokens,
                concurrency=1,
                device="cpu",
                dtype="bfloat16",
                quantization="none",
                draft_quantization="none" if speculative else None,
                draft_dtype="bfloat16" if record["variant"] == "draft" else None,
                python_version=None,
                matches_plain=float(record["token_ids"] == plain[record["prompt_id"]])
                if speculative and record["prompt_id"] in plain
                else None,
            )
            | measures(counters, record["new_tokens"], record["wall_time_s"])
        )
    return rows


def run_vllm_benchmark(
    pairs: Sequence[str], settings: VllmSettings, python: Path, progress: Callable[[int, int, str], None] | None = None
) -> pd.DataFrame:
    """Every pair's target through vLLM: plain, its draft model and/or n-gram lookup, at each gamma (see the module).

    `progress(runs done, runs in all, message)`, as `specdec.bench.harness.run_benchmark` reports.
    """
    from specdec.zoo.loading import load_tokenizer

    by_target: dict[str, list[str | None]] = {}
    for name in pairs:
        draft, target = split_pair_name(name)
        by_target.setdefault(target, []).append(None if draft == LOOKUP else draft)
    version = subprocess.run(
        [str(python), "-c", "import vllm; print(vllm.__version__)"], capture_output=True, text=True
    ).stdout.strip()
    chosen = suite(settings.categories, settings.prompts_per_category)
    total = len(chosen) * sum(1 + len(settings.gammas) * len(set(drafts)) for drafts in by_target.values())
    rows: list[dict] = []
    for target, drafts in by_target.items():
        tokenizer = load_tokenizer(target)
        encoded = {prompt.id: encode_bench_prompt(tokenizer, prompt)[0].tolist() for prompt in chosen}
        prompts = [{"id": prompt.id, "token_ids": encoded[prompt.id]} for prompt in chosen]
        facts = {prompt.id: (prompt.category, len(encoded[prompt.id])) for prompt in chosen}
        models = [draft for draft in drafts if draft is not None] or [None]
        # one job per draft model; n-gram lookup and the plain baseline ride with the first
        for index, draft in enumerate(models):
            job = vllm_job(
                vllm_model_folder(target),
                None if draft is None else vllm_model_folder(draft),
                None in drafts and index == 0,
                prompts,
                settings,
                plain=index == 0,
            )
            done = len(rows)
            records = run_worker(
                python,
                job,
                None
                if progress is None
                else lambda count, message, done=done: progress(min(done + count, total - 1), total, message),
            )
            rows += offline_rows(records, draft, target, facts, settings, version)
    if progress is not None:
        progress(total, total, "done")
    return with_vllm_speedups(pd.DataFrame(rows))
