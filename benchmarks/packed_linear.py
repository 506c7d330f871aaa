"""bfloat16 steps with the linear layers packed for oneDNN once (`specdec.kernels.packed_linear`) or reordered at every
call.

    python benchmarks/packed_linear.py            # Qwen2.5-Coder-1.5B and -0.5B, about 2 minutes

For each model: the median time of a one-token step and of a 5-token pass (a verification pass of
gamma 4) after a 200-token prompt, the two layouts interleaved step by step in one process, and
whether their logits are the same bits.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch

from specdec.runtime.pytorch.kv_cache import CachedModel
from specdec.kernels.packed_linear import pack_linear_layers
from specdec.zoo.loading import load_model


def pass_times(models: dict[str, torch.nn.Module], tokens: int, repeats: int) -> dict[str, float]:
    """Median milliseconds of a `tokens`-token pass after a 200-token prompt, the models taking turns."""
    prompt = torch.randint(0, 1000, (200,), generator=torch.Generator().manual_seed(0))
    cached = {name: CachedModel(model) for name, model in models.items()}
    for model in cached.values():
        model.feed(prompt, last=1)
    times: dict[str, list[float]] = {name: [] for name in models}
    for step in range(repeats + 2):
        new = torch.randint(0, 1000, (tokens,), generator=torch.Generator().manual_seed(step))
        for name, model in cached.items():
            start = time.perf_counter()
            model.feed(new, last=tokens)
            if step >= 2:  # two warm-up passes
                times[name].append(time.perf_counter() - start)
            model.rollback(200)
    return {name: 1000 * statistics.median(values) for name, values in times.items()}


@torch.inference_mode()
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    torch.set_num_threads(2)
    print(
        "| model | one-token step, reordered per call | packed | 5-token pass, reordered per call | packed | same "
        "logits |"
    )
    print("|---|---|---|---|---|---|")
    for name in args.models:
        stored = load_model(name, device="cpu", dtype="bfloat16", packed=False)
        fast = copy.deepcopy(stored)
        pack_linear_layers(fast)
        models = {"stored": stored, "packed": fast}
        step, verify = pass_times(models, 1, args.repeats), pass_times(models, 5, args.repeats)
        ids = torch.randint(0, 1000, (1, 64), generator=torch.Generator().manual_seed(1))
        same = torch.equal(stored(input_ids=ids).logits, fast(input_ids=ids).logits)
        print(
            f"| {name} | {step['stored']:.1f} ms | {step['packed']:.1f} ms | {verify['stored']:.1f} ms | "
            f"{verify['packed']:.1f} ms | {same} |"
        )
        del stored, fast, models


if __name__ == "__main__":
    main()
