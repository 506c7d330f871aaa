"""Which int8 path makes the cheapest draft on this CPU? One-token decode steps, timed side by side.

    pip install torchao==0.18.0          # only for this comparison; the package does not need it
    python benchmarks/int8_kernels.py    # prints the median one-token step per variant, interleaved

A draft's cost ratio c is one draft step / one target step, so the draft's step time is what an int8
path must shrink. The model is Qwen2.5-0.5B's architecture (the zoo's draft) built from its config
with random weights: the kernels see the same shapes, and nothing is downloaded. Every variant runs
in this one process, in rotation (A B C D, A B C D, ...), and the median of the rounds is reported.
"""

from __future__ import annotations

import copy
import statistics
import time
import warnings

import torch
from transformers import DynamicCache, Qwen2Config, Qwen2ForCausalLM

QWEN_05B = dict(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                num_key_value_heads=2, max_position_embeddings=32768, tie_word_embeddings=True)
PROMPT, STEPS, ROUNDS = 64, 16, 5


def dynamic_int8(model):
    """PyTorch's eager dynamic quantization (what specdec.zoo.quantization uses)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.ao.quantization.quantize_dynamic(copy.deepcopy(model).float(), {torch.nn.Linear}, dtype=torch.qint8)


def torchao_variant(config_name: str, dtype: torch.dtype):
    def make(model):
        import torchao.quantization as quantization

        quantized = copy.deepcopy(model).to(dtype)
        quantization.quantize_(quantized, getattr(quantization, config_name)())
        return quantized
    return make


@torch.inference_mode()
def step_seconds(model) -> float:
    """Median seconds of one one-token step after a PROMPT-token prefill."""
    cache = DynamicCache(config=model.config)
    ids = torch.randint(0, 1000, (1, PROMPT))
    model(input_ids=ids, cache=cache, use_cache=True, logits_to_keep=1)
    times = []
    for _ in range(STEPS):
        start = time.perf_counter()
        model(input_ids=ids[:, -1:], cache=cache, use_cache=True, logits_to_keep=1)
        times.append(time.perf_counter() - start)
    return statistics.median(times[2:])


def main() -> None:
    torch.manual_seed(0)
    base = Qwen2ForCausalLM(Qwen2Config(**QWEN_05B)).eval()
    variants = {"bfloat16": lambda m: copy.deepcopy(m).to(torch.bfloat16), "float32": lambda m: m,
                "int8 quantize_dynamic (fp32 activations)": dynamic_int8}
    try:
        import torchao.quantization  # noqa: F401

        variants |= {"int8 torchao weight-only, bf16": torchao_variant("Int8WeightOnlyConfig", torch.bfloat16),
                     "int8 torchao dynamic activations, fp32": torchao_variant("Int8DynamicActivationInt8WeightConfig", torch.float32)}
    except ImportError:
        print("torchao is not installed: pip install torchao==0.18.0 to compare it too")
    models = {}
    for name, make in variants.items():
        try:
            models[name] = make(base)
        except Exception as error:  # a kernel this build lacks
            print(f"{name}: could not be built ({str(error).splitlines()[0][:100]})")
    results = {name: [] for name in models}
    for _ in range(ROUNDS):
        for name, model in models.items():
            results[name].append(step_seconds(model))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; one-token step after a {PROMPT}-token prompt")
    for name, seconds in results.items():
        print(f"{name:<45} {statistics.median(seconds) * 1000:7.1f} ms   (rounds: {', '.join(f'{s * 1000:.0f}' for s in seconds)})")


if __name__ == "__main__":
    main()
