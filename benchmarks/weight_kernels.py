"""Which weights make the fastest exact speculative decoding on this CPU? One-token steps and multi-token passes, side
by side.

    # specdec's choices (about 6 minutes)
    python benchmarks/weight_kernels.py --out guide/measurements/kernels.csv
    # and llama.cpp's, on the zoo's GGUF files
    python benchmarks/weight_kernels.py --llama-bench ~/.cache/specdec/llama.cpp-11434.0.0/build/bin/llama-bench \\
        --out guide/measurements/kernels.csv

Speculative decoding's speed is set by two costs (the lessons' notation): c, one draft step over one
target step, and v(gamma), one target pass over gamma + 1 tokens over one step. Both depend on the
kernels, not on the algorithm. For each way of storing the weights this prints and writes, for the
shapes of Qwen2.5-Coder-1.5B (the target) and -0.5B (the draft), built from their configs with random
weights (the kernels see the same shapes; nothing is downloaded):

- `step_ms`: one one-token step after a 64-token prompt (median over rounds, variants in rotation);
- `v5`, `v17`: a pass over 6 and 18 tokens, in steps (a chain of 5 and a tree of 17 drafted tokens, plus one);
- `rows_equal`: whether one linear layer (an MLP up-projection) gave six tokens, on one random input, the
  same outputs bit for bit in one pass as one at a time. True here is no proof (float kernels may round
  otherwise on other inputs); `specdec.kernels.quantization`'s layers are built for it and tested; PyTorch's own
  dynamic int8 fails it (one activation scale per pass), so it cannot verify.

Besides the kinds specdec loads, the row `float32 int8, layers alone` is the same int8 model with each linear
layer in its own fbgemm call, as before attention's q, k, v and the MLP's gate and up were computed in one
(`specdec.kernels.quantization.SharedInput`: the same outputs, bit for bit). `--precisions` runs only some rows:

    python benchmarks/weight_kernels.py --precisions "float32 int8" "float32 int8, layers alone" --rounds 7 \
        --out guide/measurements/shared-input-int8.csv

With `--llama-bench`, llama.cpp's `llama-bench` runs the zoo's Q4_K_M files too: its `tg` (one token at
a time) gives the step, its `pp6` and `pp18` (a prompt of 6 and 18 tokens in one pass) give v5 and v17.
"""

from __future__ import annotations

import argparse
import copy
import csv
import io
import statistics
import subprocess
import time
import warnings
from pathlib import Path

import torch
from torch import nn
from transformers import DynamicCache, Qwen2Config, Qwen2ForCausalLM

from specdec.kernels.quantization import Int8Linear, quantize_model

SHAPES = {  # Qwen2.5-Coder's configs (the zoo's GGUF files have the same shapes)
    "qwen2.5-coder-1.5b": dict(
        vocab_size=151936,
        hidden_size=1536,
        intermediate_size=8960,
        num_hidden_layers=28,
        num_attention_heads=12,
        num_key_value_heads=2,
        tie_word_embeddings=True,
    ),
    "qwen2.5-coder-0.5b": dict(
        vocab_size=151936,
        hidden_size=896,
        intermediate_size=4864,
        num_hidden_layers=24,
        num_attention_heads=14,
        num_key_value_heads=2,
        tie_word_embeddings=True,
    ),
}
PROMPT, ROUNDS, PASSES = 64, 3, 5
FIELDS = ["engine", "model", "precision", "step_ms", "v5", "v17", "rows_equal", "threads", "torch"]


def torch_dynamic_int8(model: nn.Module) -> nn.Module:
    """PyTorch's eager dynamic quantization: one activation scale per pass (what specdec used for drafts before)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.ao.quantization.quantize_dynamic(copy.deepcopy(model).float(), {nn.Linear}, dtype=torch.qint8)


class LayersAlone:
    """The int8 model with each linear layer in its own fbgemm call, as before `SharedInput` computed siblings in one.

    The same object and weights as the "float32 int8" variant (a second model would not fit beside the
    others): its shared layers get a packing of their own too, and a call switches to those.
    """

    def __init__(self, model: nn.Module) -> None:
        self.model, self.config = model, model.config
        self.groups = {
            layer: layer._shared
            for layer in model.modules()
            if isinstance(layer, Int8Linear) and layer._shared is not None
        }
        for layer in self.groups:
            layer.pack()

    def __call__(self, **inputs):
        for layer in self.groups:
            layer._shared = None
        try:
            return self.model(**inputs)
        finally:
            for layer, group in self.groups.items():
                layer._shared = group

    def __getattr__(self, name: str):
        return getattr(self.model, name)


# made from a bfloat16 model one after the other (float32 ones would not fit 24 GiB together with the rest)
VARIANTS = {
    "bfloat16": lambda model: model,
    "float32 int8": lambda model: quantize_model(copy.deepcopy(model).float(), "int8"),
    "bfloat16 int4": lambda model: quantize_model(copy.deepcopy(model), "int4"),
    "float32 torch dynamic int8": torch_dynamic_int8,
}


@torch.inference_mode()
def pass_ms(model: nn.Module, tokens: int) -> float:
    """Median milliseconds of one pass over `tokens` new tokens after a PROMPT-token prefill (rolled back each time)."""
    cache = DynamicCache(config=model.config)
    model(input_ids=torch.randint(0, 1000, (1, PROMPT)), past_key_values=cache, use_cache=True, logits_to_keep=1)
    ids = torch.randint(0, 1000, (1, tokens))
    times = []
    for _ in range(PASSES):
        start = time.perf_counter()
        model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=tokens)
        times.append(time.perf_counter() - start)
        cache.crop(-tokens)
    return statistics.median(times[1:]) * 1000


@torch.inference_mode()
def linear_rows_equal(model: nn.Module) -> bool:
    """Whether every linear layer gives a token the same output in a pass of 6 as alone (bit for bit)."""
    layer = next(module for name, module in model.named_modules() if name.endswith("mlp.up_proj"))
    x = torch.randn(6, layer.in_features) * torch.rand(6, 1) * 4
    x = x.to(next(model.parameters()).dtype)
    return bool(torch.equal(layer(x), torch.cat([layer(row[None]) for row in x])))


ALONE = "float32 int8, layers alone"


def specdec_rows(threads: int, precisions: list[str] | None = None, rounds: int = ROUNDS) -> list[dict]:
    rows = []
    wanted = precisions or [*VARIANTS, ALONE]
    for name, shape in SHAPES.items():
        torch.manual_seed(0)
        base = Qwen2ForCausalLM(Qwen2Config(**shape)).eval().to(torch.bfloat16)
        models = {
            precision: make(base)
            for precision, make in VARIANTS.items()
            if precision in wanted or (precision == "float32 int8" and ALONE in wanted)
        }
        if ALONE in wanted:
            models[ALONE] = LayersAlone(models["float32 int8"])
        models = {precision: models[precision] for precision in [*VARIANTS, ALONE] if precision in wanted}
        del base
        times: dict[tuple[str, int], list[float]] = {}
        for _ in range(rounds):  # in rotation, so drift hits every variant alike
            for precision, model in models.items():
                for tokens in (1, 6, 18):
                    times.setdefault((precision, tokens), []).append(pass_ms(model, tokens))
        for precision, model in models.items():
            step = statistics.median(times[precision, 1])
            rows.append(
                dict(
                    engine="specdec",
                    model=name,
                    precision=precision,
                    step_ms=round(step, 1),
                    v5=round(statistics.median(times[precision, 6]) / step, 2),
                    v17=round(statistics.median(times[precision, 18]) / step, 2),
                    rows_equal=linear_rows_equal(model),
                    threads=threads,
                    torch=torch.__version__,
                )
            )
            print(rows[-1], flush=True)
        del models
    return rows


def llama_rows(llama_bench: str, threads: int) -> list[dict]:
    from specdec.zoo.catalog import resolve_model
    from specdec.zoo.fetch import checkpoint_path

    rows = []
    for name in SHAPES:
        gguf = checkpoint_path(resolve_model(name))
        output = subprocess.run(
            [llama_bench, "-m", str(gguf), "-t", str(threads), "-p", "1,6,18", "-n", "32", "-r", "3", "-o", "csv"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        rates = {}
        for record in csv.DictReader(io.StringIO(output)):
            prompt, generated = int(record["n_prompt"]), int(record["n_gen"])
            rates["tg" if generated else f"pp{prompt}"] = float(record["avg_ts"])  # tokens per second
        step = 1000 / rates["tg"]
        rows.append(
            dict(
                engine="llama.cpp",
                model=name,
                precision="Q4_K_M",
                step_ms=round(step, 1),
                v5=round(6000 / rates["pp6"] / step, 2),
                v17=round(18000 / rates["pp18"] / step, 2),
                rows_equal="",
                threads=threads,
                torch="",
            )
        )
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--llama-bench", default=None, help="path to llama.cpp's llama-bench (benchmarks/llama_cpp.py build makes it)"
    )
    parser.add_argument("--out", default=None, help="write the rows to this CSV")
    parser.add_argument("--precisions", nargs="+", choices=[*VARIANTS, ALONE], help="only these (default: all)")
    parser.add_argument(
        "--rounds", type=int, default=ROUNDS, help="rounds of every variant in rotation (default: %(default)s)"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = specdec_rows(args.threads, args.precisions, args.rounds) + (
        llama_rows(args.llama_bench, args.threads) if args.llama_bench else []
    )
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=FIELDS)
            writer.writeheader()
            writer.writerows(rows)
        print(f"wrote {len(rows)} rows to {args.out}")


if __name__ == "__main__":
    main()
