"""Runs the benchmark's prompts through vLLM's offline `LLM`, in vLLM's own Python environment.

This file is a script, not a module of the package: `specdec.bench.vllm.worker_process` starts it with the
Python of the environment that has vLLM (vLLM pins other transformers versions than the app, so
the two cannot share one), writes one JSON job to its stdin and reads JSON lines from its stdout:

    {"event": "progress", "message": "draft gamma=5: code-1"}
    {"event": "row", "variant": "draft", "gamma": 5, "prompt_id": "code-1", "new_tokens": 128,
     "wall_time_s": 9.1, "token_ids": [...], "counters": {"drafts": 30, ...}}
    {"event": "error", "message": "one line"}

It imports only the standard library and vLLM. vLLM's own log goes to stderr: stdout carries the
JSON lines alone. The job (see `offline.vllm_job`):

    {"target": folder, "draft": folder or null, "dtype": "bfloat16", "enforce_eager": true,
     "max_new_tokens": 128, "temperature": 0.0, "seed": 0, "warmup": 1, "kv_cache_gib": 4,
     "variants": [{"name": "plain"}, {"name": "draft", "gamma": 5}, {"name": "ngram", "gamma": 5,
                  "ngram_min": 1, "ngram_max": 3}],
     "prompts": [{"id": "code-1", "token_ids": [...]}]}

Each variant gets its own `LLM` (one engine, then shut down); per prompt, the spec-decode counters
of `LLM.get_metrics()` are read before and after the call, so each row carries that prompt's own.
"""

from __future__ import annotations

import json
import os
import sys
import time

_OUT = sys.stdout  # main() points this at the real stdout, and fd 1 (vLLM's log, its engine process's) at stderr


def emit(event: str, **fields) -> None:
    _OUT.write(json.dumps({"event": event, **fields}) + "\n")
    _OUT.flush()


def speculative_config(variant: dict, draft: str | None) -> dict | None:
    """vLLM's `speculative_config` for one variant: None (plain), the draft model, or n-gram lookup.

    >>> speculative_config({"name": "ngram", "gamma": 4, "ngram_min": 1, "ngram_max": 3}, None)
    {'method': 'ngram', 'num_speculative_tokens': 4, 'prompt_lookup_min': 1, 'prompt_lookup_max': 3}
    """
    if variant["name"] == "plain":
        return None
    if variant["name"] == "draft":
        return {"method": "draft_model", "model": draft, "num_speculative_tokens": variant["gamma"]}
    if variant["name"] == "ngram":
        return {
            "method": "ngram",
            "num_speculative_tokens": variant["gamma"],
            "prompt_lookup_min": variant.get("ngram_min", 1),
            "prompt_lookup_max": variant.get("ngram_max", 3),
        }
    raise ValueError(f"unknown variant {variant['name']}")


def counters(llm) -> list[dict]:
    """The spec-decode part of `llm.get_metrics()` as plain JSON: [{"name", "value"} or {"name", "values"}]."""
    out = []
    for metric in llm.get_metrics():
        if metric.name.startswith("vllm:spec_decode_"):
            values = getattr(metric, "values", None)
            out.append(
                {"name": metric.name, "values": list(values)}
                if isinstance(values, list)
                else {"name": metric.name, "value": getattr(metric, "value", 0)}
            )
    return out


def run_variant(job: dict, variant: dict) -> None:
    from vllm import LLM, SamplingParams

    label = variant["name"] + (f" gamma={variant['gamma']}" if "gamma" in variant else "")
    emit("progress", message=f"starting vLLM for {label} (a minute or more)")
    llm = LLM(
        model=job["target"],
        dtype=job.get("dtype", "bfloat16"),
        enforce_eager=job.get("enforce_eager", True),
        speculative_config=speculative_config(variant, job.get("draft")),
        disable_log_stats=False,
        seed=job.get("seed", 0),
        max_model_len=job.get("max_model_len", 4096),
    )
    params = SamplingParams(
        temperature=job.get("temperature", 0.0), max_tokens=job["max_new_tokens"], seed=job.get("seed", 0)
    )
    prompts = [{"prompt_token_ids": prompt["token_ids"]} for prompt in job["prompts"]]
    try:
        for _ in range(job.get("warmup", 1)):
            llm.generate(prompts[:1], params, use_tqdm=False)
        for prompt, tokens in zip(job["prompts"], prompts):
            emit("progress", message=f"{label}: {prompt['id']}")
            before = counters(llm)
            start = time.perf_counter()
            output = llm.generate([tokens], params, use_tqdm=False)[0]
            wall = time.perf_counter() - start
            token_ids = list(output.outputs[0].token_ids)
            emit(
                "row",
                variant=variant["name"],
                gamma=variant.get("gamma"),
                prompt_id=prompt["id"],
                new_tokens=len(token_ids),
                wall_time_s=wall,
                token_ids=token_ids,
                counters_before=before,
                counters_after=counters(llm),
            )
    finally:
        del llm
        import gc

        gc.collect()


def main() -> int:
    global _OUT
    _OUT = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    try:
        job = json.loads(sys.stdin.read())
        for variant in job["variants"]:
            run_variant(job, variant)
    except Exception as error:  # one line for the parent; the traceback stays in the log (stderr)
        import traceback

        traceback.print_exc()
        emit(
            "error",
            message=f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}",
        )
        return 1
    emit("done")
    return 0


if __name__ == "__main__":  # vLLM's LLM starts an engine process: the guard keeps it from re-running this
    sys.exit(main())
