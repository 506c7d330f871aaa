"""The machine proves the W8A8 kernel before specdec uses it: loaded in a subprocess, tested bit for bit, the verdict
kept.

vLLM's prebuilt CPU library is built for AVX-512. On a CPU without it, loading it (or its first
multiplication) dies of SIGILL, an illegal instruction, which no `try` can catch. And exactness
needs more than "it runs": a token's row must be the same bits whichever pass computes it, or the
target's verification pass and its own one-token steps would disagree. So, once per machine:

1. the CPU's flags are read; a CPU without `NEEDED_FLAGS` is refused at once (nothing downloaded);
2. a subprocess (`python -m specdec.kernels.w8a8_gate LIBRARY`) loads the library and runs `self_test`:
   one layer of each of two shapes, passes of 2, 6 and 17 tokens, each row compared bit for bit with a
   one-token pass and its error with exact integer arithmetic (`w8a8.REFERENCE`); then a tiny model
   with W8A8 layers, whose pass over a prompt, a chain and a tree (with its attention mask) must give
   the logits its one-token steps give;
3. the verdict (`Verdict`: usable or not, and why in one line) is kept in a JSON file, keyed by what
   could change it: the CPU's model and flags, the torch version and the library's SHA-256.

A subprocess that dies says how (SIGILL: an instruction this CPU lacks); a test that fails says which
and where. Where W8A8 is refused, every other kind runs as before, and asking for it is one line:

    >>> rows_agree(REFERENCE, shape=(32, 64)) is None                   # the reference is exact per row
    True
    >>> def one_row_off(x, packed, scale, bias):                        # a kernel whose M-row passes differ in one row
    ...     y = REFERENCE.multiply(x, packed, scale, bias)
    ...     return torch.cat([y[:1] * 1.01, y[1:]]).to(y.dtype) if len(y) > 1 else y
    >>> rows_agree(Kernel("broken", REFERENCE.pack, one_row_off), shape=(32, 64))
    'a pass of 2 tokens gives token 0 other bits than a one-token pass (layer 32 x 64)'
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from specdec.kernels.invariant_attention import use_invariant_attention
from specdec.kernels.quantization import apply_quantization
from specdec.kernels.w8a8 import REFERENCE, Kernel, W8A8Linear, kernel_in_use, use_kernel, vllm_kernel
from specdec.store import write_text
from specdec.store.machine import cpu_facts as machine_facts

NEEDED_FLAGS = ("avx512f", "avx512_vnni")  # the library's build and its int8 dot products
PASSES = (2, 6, 17)  # tokens per pass: a chain of 1, of 5, a tree of 16
SHAPES = ((256, 1536), (1536, 8960))  # (N, K): the 1.5B's k_proj and down_proj
MAX_ERROR = 0.02  # relative to the largest output, against exact integer arithmetic
SELF_TEST_TIMEOUT_S = 600


@dataclass(frozen=True)
class Verdict:
    """Whether W8A8 may run on this machine, why (one line), and the library that passed."""

    usable: bool
    why: str
    library: str | None = None


def cpu_facts() -> dict[str, object]:
    """The CPU's model name and the flags that matter here (`specdec.store.machine`)."""
    return machine_facts(("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_int8"))


def cpu_refusal(facts: dict[str, object] | None = None) -> Verdict | None:
    """A refusal when this CPU lacks any of `NEEDED_FLAGS` (nothing need be downloaded or run to know it), else None."""
    have = set((facts or cpu_facts())["flags"])
    missing = [flag for flag in NEEDED_FLAGS if flag not in have]
    return (
        Verdict(False, f"this CPU lacks {', '.join(missing)}, for which vLLM's CPU kernel is built")
        if missing
        else None
    )


def rows_agree(kernel: Kernel, shape: tuple[int, int], seed: int = 0) -> str | None:
    """None when every pass of `PASSES` tokens gives each token
    the bits a one-token pass gives it, else which did not."""
    n, k = shape
    generator = torch.Generator().manual_seed(seed)
    weight_int8 = torch.randint(-127, 128, (n, k), generator=generator, dtype=torch.int8)
    weight_scale = torch.rand(n, generator=generator) / 100 + 1e-3
    bias = torch.randn(n, generator=generator)
    x = torch.randn(max(PASSES), k, generator=generator)
    x[1] *= 1000  # tokens of very different sizes, side by side
    x[2] /= 1000
    x = x.to(torch.bfloat16)
    packed = kernel.pack(weight_int8)
    alone = torch.cat([kernel.multiply(x[i : i + 1], packed, weight_scale, bias) for i in range(len(x))])
    for m in PASSES:
        together = kernel.multiply(x[:m].contiguous(), packed, weight_scale, bias)
        for i in range(m):
            if not torch.equal(together[i], alone[i]):
                return f"a pass of {m} tokens gives token {i} other bits than a one-token pass (layer {n} x {k})"
    exact = REFERENCE.multiply(x, weight_int8, weight_scale, bias).double()
    error = float((alone.double() - exact).abs().max() / exact.abs().max())
    if error > MAX_ERROR:
        return f"its results differ from exact int8 arithmetic by {error:.3g} of the largest output (layer {n} x {k})"
    return None


def tiny_model_agrees(kernel: Kernel, seed: int = 0) -> str | None:
    """None when a tiny model with W8A8 layers gives a prompt pass, a chain pass and a tree pass (with its mask) the
    logits of its one-token steps, bit for bit; else which pass did not. The whole path a target takes, on this
    machine."""
    from transformers import DynamicCache, Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=256,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    model = Qwen2ForCausalLM(config).to(torch.bfloat16).eval()
    with kernel_in_use(kernel):
        apply_quantization(model, "w8a8")
    if not any(isinstance(layer, W8A8Linear) for layer in model.modules()):
        return "the tiny model got no W8A8 layers"
    use_invariant_attention(model)
    ids = torch.randint(0, 256, (1, 24))
    with torch.no_grad():
        cache = DynamicCache(config=config)
        steps = torch.cat(
            [model(input_ids=ids[:, i : i + 1], cache=cache, use_cache=True).logits[0] for i in range(24)]
        )
        cache = DynamicCache(config=config)
        prompt = model(input_ids=ids[:, :10], cache=cache, use_cache=True).logits[0]
        chain = model(input_ids=ids[:, 10:16], cache=cache, use_cache=True).logits[0]
        # a tree after the chain, as the engine passes one (a bool mask, positions by depth): nodes 16..23, each the
        # child of the node before, except node 20, a second child of node 17, and its own descendants
        parents = [-1, 0, 1, 2, 1, 4, 5, 6]
        allowed = torch.eye(8, dtype=torch.bool)
        for node, parent in enumerate(parents):
            if parent >= 0:
                allowed[node] |= allowed[parent]
        # [1, 1, 8 nodes, 16 cached + 8]
        mask = torch.cat([torch.ones(8, 16, dtype=torch.bool), allowed], dim=1)[None, None]
        positions = 16 + allowed.sum(dim=1)[None] - 1  # [1, 8]: 16 + depth
        tree = model(
            input_ids=ids[:, 16:24], cache=cache, use_cache=True, attention_mask=mask, position_ids=positions
        ).logits[0]
    if not torch.equal(prompt, steps[:10]):
        return "a prompt pass of the tiny model differs from its one-token steps"
    if not torch.equal(chain, steps[10:16]):
        return "a chain pass of the tiny model differs from its one-token steps"
    path = [0, 1, 2, 3]  # nodes 16..19 are a chain: their logits are the steps'
    if not torch.equal(tree[path], steps[16:20]):
        return "a tree pass of the tiny model differs from its one-token steps"
    return None


def self_test(kernel: Kernel) -> str | None:
    """None when `kernel` keeps specdec's promise on this machine, else why not (one line)."""
    for shape in SHAPES:
        reason = rows_agree(kernel, shape)
        if reason:
            return reason
    return tiny_model_agrees(kernel)


def probe(library: str) -> Verdict:
    """In this process: load `library` and test its kernel. Run
    it in a subprocess (`check_machine`): it may die of SIGILL."""
    try:
        torch.ops.load_library(library)
        kernel = vllm_kernel()
    except (OSError, RuntimeError, AttributeError) as error:
        return Verdict(False, f"vLLM's CPU library did not load: {str(error).splitlines()[0]}")
    reason = self_test(kernel)
    if reason:
        return Verdict(False, f"vLLM's CPU kernel failed this machine's test: {reason}")
    return Verdict(True, "vLLM's CPU kernel passed this machine's test (rows bit-equal across passes)", library)


def _self_test_command(library: Path) -> list[str]:
    return [sys.executable, "-m", "specdec.kernels.w8a8_gate", str(library)]


def check_machine(library: Path, library_sha256: str, verdict_path: Path) -> Verdict:
    """The verdict for this machine: the kept one when nothing
    that could change it changed, else a new subprocess test."""
    facts = cpu_facts()
    key = {**facts, "torch": torch.__version__, "library_sha256": library_sha256}
    refused = cpu_refusal(facts)
    if refused is not None:
        return refused
    try:
        kept = json.loads(verdict_path.read_text())
        if kept.get("key") == key:
            return Verdict(**kept["verdict"])
    except (OSError, ValueError, TypeError):
        pass
    try:
        completed = subprocess.run(
            _self_test_command(library), capture_output=True, text=True, timeout=SELF_TEST_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        verdict = Verdict(False, f"this machine's test of vLLM's CPU kernel took over {SELF_TEST_TIMEOUT_S} s")
    else:
        lines = [line for line in completed.stdout.splitlines() if line.startswith("{")]
        if completed.returncode in (-4, 132):
            verdict = Verdict(False, "vLLM's CPU library died of SIGILL here: it needs instructions this CPU lacks")
        elif completed.returncode != 0 or not lines:
            tail = (completed.stderr.strip().splitlines() or [f"exit {completed.returncode}"])[-1]
            verdict = Verdict(False, f"this machine's test of vLLM's CPU kernel failed: {tail}")
        else:
            verdict = Verdict(**json.loads(lines[-1]))
    write_text(verdict_path, json.dumps({"key": key, "verdict": asdict(verdict)}, indent=2))  # whole or absent
    return verdict


def activate(verdict: Verdict) -> Verdict:
    """Load a library that passed into this process and make its kernel the one W8A8 layers use; else record why not."""
    if not verdict.usable:
        use_kernel(None, verdict.why)
        return verdict
    try:
        torch.ops.load_library(verdict.library)
        use_kernel(vllm_kernel())
    except (OSError, RuntimeError, AttributeError) as error:
        verdict = Verdict(
            False, f"vLLM's CPU library passed its test but did not load here: {str(error).splitlines()[0]}"
        )
        use_kernel(None, verdict.why)
    return verdict


if __name__ == "__main__":
    print(json.dumps(asdict(probe(sys.argv[1]))), flush=True)
