"""Which passes of a torch target give one-token steps' bits on this machine: k*, found at load, kept per machine.

Notation: p is the target; k* the longest pass whose rows equal one-token steps bit for bit here; v(k) the cost of a
pass over k tokens in one-token steps.

Speculative decoding promises the target's own output, and the target's own output is what plain decoding computes:
one token a pass. A verification pass computes k rows at once, and a kernel may add them up in another order for
another row count (oneDNN multiplies one row by another kernel than 2 to 64 rows on an Intel Xeon without AVX-512
BF16; MKL's float32 switches at 16 rows; transformers' bfloat16 attention at 2). A last-bit difference flips a
near-tie, and the texts part (a bfloat16 run parted at token 89 on an AMD EPYC). So, as llama.cpp's runtime proves its
settings before it runs (`specdec.runtime.llama_cpp.self_test`), every torch target path proves its own here:

1. `self_test(module)` runs the model's own kernels at its own shapes on a view of it (its first and last decoder
   layers, the same weights: a row-invariant layer stays one when 26 more like it are stacked between, and two
   layers show a difference that one propagates), and compares bit for bit, against one-token steps after a prompt:
   the rows of passes of every size 2..17 (`SIZES`), each after a rollback; the step after a rollback into a pass; a
   6-node token tree and the steps after keeping its second branch; passes after 300 and 700 tokens of text; and the
   output layer's rows for every size. k* is the largest size up to which every check passed (1: none did);
2. where a one-row call is the odd one out (oneDNN's packed layers: `specdec.kernels.packed_linear.set_min_rows`),
   the test runs again with one-row calls padded to two rows, and the better of the two is kept;
3. `check_target(module)` keeps the verdict in `torch/self-test.json` in specdec's cache, keyed by what could change
   it (the CPU's model and flags, torch's and transformers' versions, threads, device, dtype, weights, layer kinds,
   attention, shapes), under a lock (`specdec.store.update_json`): a later load reads it and runs nothing.

Every target pass is then cut into checked sizes (`specdec.runtime.pytorch.cut`), so every row it gives is a
one-token step's. A path whose k* is 1 cannot verify several tokens exactly here: plain decoding runs, speculation is
refused before any token (`specdec.pair.loading`).

    verdict = check_target(module)      # RowsVerdict(k_star=17, min_rows=2, why="every pass of 2..17 tokens ...")
    TorchModel(module, cut=verdict.sizes)

Measured on the zoo's Qwen2.5-Coder-1.5B, Intel Xeon with AVX-512 VNNI, no AMX, no AVX-512 BF16, 2 threads
(`python benchmarks/batch_invariance.py`): float32 and bfloat16 as transformers runs them, k* = 1; packed for oneDNN
with one-row calls padded to two and float64 attention, k* = 17 in both; int8, k* = 17 as it is. Even a tiny float64
model is not taken on trust: transformers' attention gives its 2-token pass other bits in the 17th digit.

    >>> RowsVerdict(k_star=4, min_rows=2, why="...").sizes   # the sizes a pass is cut into
    (2, 3, 4)
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import torch
import transformers
from torch import nn

from specdec.kernels.packed_linear import PackedLinear, set_min_rows
from specdec.errors import SpecdecError
from specdec.runtime.pytorch.kv_cache import CachedModel
from specdec.runtime.pytorch.layers import decoder_layers, skip_layers
from specdec.store import cache_dir, read_json, update_json
from specdec.store.machine import cpu_facts

SIZES = tuple(range(2, 18))  # the pass sizes checked: a chain of up to 16 drafts, a tree of 16 nodes plus its root
PROMPT = 10
LONG_TEXTS = (300, 700)  # attention over a longer text may take another path
LONG_SIZES = (2, 3, 6, 17)  # the sizes checked again there


@dataclass(frozen=True)
class RowsVerdict:
    """k*: the longest pass whose rows equal one-token steps here (1: none longer); `sizes` the checked sizes up to
    k*, which a pass is cut into; `min_rows` how many rows each packed layer's call is padded to; `why` one line."""

    k_star: int
    min_rows: int
    why: str
    seconds: float = 0.0

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(size for size in SIZES if size <= self.k_star)


class _Hidden(nn.Module):
    """The view's output layer: the final norm's rows as they are (the real output layer is checked on its own)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.out_features = width

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return hidden


def _view(module: nn.Module) -> nn.Module:
    """`module` running only its first and last decoder layers (`skip_layers`), its output layer replaced by `_Hidden`:
    shared weights, nothing copied."""
    _, layers = decoder_layers(module)
    view = skip_layers(module, range(1, len(layers) - 1))  # its own `_modules`: the head can be swapped in it alone
    head = module.get_output_embeddings()
    view._modules[next(n for n, child in module.named_children() if child is head)] = _Hidden(head.in_features)
    return view


def _differ(together: torch.Tensor, alone: torch.Tensor, what: str) -> str | None:
    """None when the rows are the same bits, else which row differs and by how much."""
    for i, (a, b) in enumerate(zip(together, alone)):
        if not torch.equal(a, b):
            return f"{what} gives row {i} other bits than one-token steps (up to {float((a - b).abs().max()):.2g})"
    return None


def _steps(view: nn.Module, ids: torch.Tensor, prompt: int) -> torch.Tensor:
    """The final norm's rows [n - prompt, H] of tokens prompt..n-1, one token a pass after a prompt pass."""
    cache = CachedModel(view)
    cache.feed(ids[:prompt])
    return torch.cat([cache.feed(ids[i : i + 1]) for i in range(prompt, len(ids))])


def _largest_passing(
    view: nn.Module, text: torch.Tensor, prompt: int, sizes: tuple[int, ...]
) -> tuple[int, str, torch.Tensor]:
    """(the largest size up to which every pass after `prompt` tokens equals one-token steps, why the next failed, the
    one-token steps' rows computed as the reference).

    One prompt pass, then the one-token steps (the reference), then each pass after a rollback to the prompt: the
    prompt's rows are computed once."""
    cache = CachedModel(view)
    cache.feed(text[:prompt])
    reference = torch.empty(0)
    passed = 1
    for size in sizes:
        if size > len(reference):  # the steps from the prompt: 2 first (a path failing there pays little), then all
            cache.rollback(prompt)
            end = prompt + (size if not len(reference) else max(sizes))
            reference = torch.cat([cache.feed(text[i : i + 1]) for i in range(prompt, end)])
        cache.rollback(prompt)
        reason = _differ(cache.feed(text[prompt : prompt + size], last=size), reference, f"a pass of {size} tokens")
        if reason:
            return passed, f"{reason} after {prompt} tokens", reference
        passed = size
    return passed, "", reference


def _tree_and_rollback(view: nn.Module, text: torch.Tensor) -> str | None:
    """The step after a rollback into a pass; a 6-node tree's rows and the steps after keeping its second branch."""
    reference = _steps(view, text[:20], PROMPT)
    cache = CachedModel(view)
    cache.feed(text[:PROMPT])
    cache.feed(text[PROMPT : PROMPT + 6], last=6)
    cache.rollback(PROMPT + 2)
    reason = _differ(cache.feed(text[PROMPT + 2 : PROMPT + 3]), reference[2:3], "the step after a rollback")
    if reason:
        return reason
    other = text[30:33]  # a second branch of other tokens
    tokens = torch.cat([text[PROMPT : PROMPT + 3], other])  # nodes 0-1-2 and 3-4-5
    seen = torch.eye(6, dtype=torch.bool)
    for node, parent in enumerate([-1, 0, 1, -1, 3, 4]):
        if parent >= 0:
            seen[node] |= seen[parent]
    attend = torch.cat([torch.ones(6, PROMPT, dtype=torch.bool), seen], dim=1)  # [6 nodes, 10 cached + 6]
    depth = seen.sum(dim=1) - 1
    branch = torch.cat([text[:PROMPT], other, text[40:43]])
    branch_reference = _steps(view, branch, PROMPT)
    cache = CachedModel(view)
    cache.feed(text[:PROMPT])
    tree = cache.feed(tokens, last=6, attend=attend, positions=PROMPT + depth)
    reason = _differ(tree[:3], reference[:3], "a token tree's first branch") or _differ(
        tree[3:], branch_reference[:3], "a token tree's second branch"
    )
    if reason:
        return reason
    cache.keep(list(range(PROMPT)) + [13, 14, 15])
    after = torch.cat([cache.feed(branch[i : i + 1]) for i in range(13, 16)])
    return _differ(after, branch_reference[3:6], "the steps after keeping a tree's second branch")


def _output_layer(head: nn.Module, rows: torch.Tensor, sizes: tuple[int, ...]) -> tuple[int, str]:
    """(the largest size up to which the output layer's rows equal its one-row calls', why the next failed)."""
    with torch.inference_mode():
        alone = torch.cat([head(rows[i : i + 1]) for i in range(max(sizes))])
        passed = 1
        for size in sizes:
            reason = _differ(head(rows[:size]), alone, f"the output layer over {size} rows")
            if reason:
                return passed, reason
            passed = size
    return passed, ""


def _run(module: nn.Module, sizes: tuple[int, ...] = SIZES) -> tuple[int, str]:
    """(k*, why) for `module` as it is now (module docstring, step 1)."""
    view = _view(module)
    vocab = module.get_input_embeddings().num_embeddings
    text = torch.randint(0, vocab, (max(LONG_TEXTS) + 32,), generator=torch.Generator().manual_seed(0))
    k_star, why, reference = _largest_passing(view, text, PROMPT, sizes)
    if k_star >= 6:
        reason = _tree_and_rollback(view, text)
        if reason:
            return 1, reason
    for length in LONG_TEXTS:
        checked = tuple(size for size in LONG_SIZES if size <= k_star)
        if checked:
            passed, reason, _ = _largest_passing(view, text, length, checked)
            if reason:  # the sizes between the last that passed and this one are not known here: not trusted
                k_star, why = passed, reason
    if k_star > 1:  # the reference steps' rows, all of `sizes` (past 2 they were all taken), into the output layer
        head_passed, reason = _output_layer(module.get_output_embeddings(), reference, sizes)
        if head_passed < k_star:
            k_star, why = head_passed, reason
    return k_star, why


def self_test(module: nn.Module) -> RowsVerdict:
    """This machine's verdict for `module`'s passes (module docstring); pads packed layers' one-row calls to two rows
    when that makes longer passes exact, and leaves them so."""
    start = time.perf_counter()
    with torch.inference_mode():
        set_min_rows(module, 1)  # as loaded, whatever an earlier verdict set
        try:
            k_star, why = _run(module)
        except (SpecdecError, StopIteration, AttributeError, RuntimeError, ValueError, IndexError) as error:
            # a model the view cannot be made of: no pass is trusted, so it runs plain, exactly
            reason = f"the self-test cannot run on this {type(module).__name__} ({type(error).__name__}: {error})"
            return RowsVerdict(1, 1, reason.splitlines()[0], time.perf_counter() - start)
        min_rows = 1
        if k_star < max(SIZES) and any(isinstance(layer, PackedLinear) for layer in module.modules()):
            set_min_rows(module, 2)
            padded, padded_why = _run(module)
            if padded > k_star:
                k_star, why, min_rows = padded, padded_why, 2
            else:
                set_min_rows(module, 1)
    seconds = time.perf_counter() - start
    why = why or f"every pass of 2..{k_star} tokens gives one-token steps' bits"
    return RowsVerdict(k_star, min_rows, why, seconds)


def path_key(module: nn.Module) -> dict[str, object]:
    """What the verdict depends on: this machine, the libraries, the threads, and the path (device, dtype, layer kinds,
    attention, shapes); not the weights' values."""
    config = module.config.get_text_config(decoder=True)
    weight = next(module.parameters())
    return {
        **cpu_facts(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "threads": torch.get_num_threads(),
        "device": str(weight.device),
        "dtype": str(weight.dtype),
        "weights": getattr(module, "specdec_quantization", "none"),
        "layers": sorted({type(layer).__name__ for layer in module.modules() if not list(layer.children())}),
        "attention": str(config._attn_implementation),
        "shapes": [
            config.model_type,
            getattr(config, "hidden_size", None),
            getattr(config, "intermediate_size", None),
            getattr(config, "num_attention_heads", None),
            getattr(config, "num_key_value_heads", None),
            module.get_output_embeddings().out_features,
        ],
    }


def verdict_path():
    return cache_dir() / "torch" / "self-test.json"


def check_target(module: nn.Module, path=None) -> RowsVerdict:
    """The kept verdict for this path on this machine, else a new `self_test`, kept (two loads at once lose nothing);
    packed layers are padded as the verdict says."""
    import json

    path = verdict_path() if path is None else path
    name = json.dumps(path_key(module), sort_keys=True)
    kept = read_json(path).get("verdicts", {}).get(name)
    if kept is not None:
        verdict = RowsVerdict(**kept)
        set_min_rows(module, verdict.min_rows)
        return verdict
    verdict = _SEEN.get(name) or self_test(module)  # this process tested this path already: the same verdict
    _SEEN[name] = verdict
    set_min_rows(module, verdict.min_rows)
    update_json(path, lambda store: store.setdefault("verdicts", {}).__setitem__(name, asdict(verdict)))
    return verdict


_SEEN: dict[str, RowsVerdict] = {}  # verdicts this process found, by key: another store (a test's) reads them too


def passing_paths(path=None) -> list[str]:
    """The paths whose kept verdicts passed passes longer than one token here: '--dtype X --quantization Y (k* = N)'."""
    import json

    named = []
    for key, verdict in read_json(verdict_path() if path is None else path).get("verdicts", {}).items():
        facts = json.loads(key)
        if verdict["k_star"] > 1 and facts.get("cpu") == cpu_facts()["cpu"]:
            dtype = str(facts["dtype"]).removeprefix("torch.")
            named.append(f"--dtype {dtype} --quantization {facts['weights']} (k* = {verdict['k_star']})")
    return sorted(set(named))
