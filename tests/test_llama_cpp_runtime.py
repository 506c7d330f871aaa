"""The llama.cpp runtime on tiny quantized GGUF files written here: exact against its own one-token steps.

Exactness is checked against the only reference that matters for speculative decoding: the same model fed
one token a pass. Every check compares bit for bit (`torch.equal`), never with a tolerance:

- a k-token pass gives the rows of k one-token steps; a ragged batch of three texts gives each text's rows
  alone; a token tree's rows are the rows of each branch fed as a chain;
- after `keep` (a tree's second branch) and `rollback`, and after the cache was repacked, the next rows are
  a fresh run's;
- the self-test passes with the exact settings and refuses llama.cpp's defaults on the same tiny file (the
  negative control that proves it can fail), in process and through its subprocess with a kept verdict;
- a corrupt GGUF, `hidden=True`, a pattern llama.cpp cannot draw and a library that does not match its
  declarations each give one line.

Skipped, with the reason, when xllamacpp (the pinned wheel with llama.cpp's library) is not installed.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch

from specdec.errors import SpecdecError

try:
    import cffi  # noqa: F401
    from specdec.runtime.llama_cpp.library import library_path

    library_path()
except (ImportError, SpecdecError) as error:  # pragma: no cover - depends on the environment
    pytest.skip(f"the llama.cpp runtime is not installed here: {error}", allow_module_level=True)

from specdec.runtime.llama_cpp import declarations, library, self_test
from specdec.runtime.llama_cpp.model import load_gguf
from specdec.runtime.llama_cpp.settings import EXACT, LLAMA_DEFAULTS
from specdec.runtime.llama_cpp.tiny_model import write_tiny_quantized_gguf


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory):
    return write_tiny_quantized_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf")


@pytest.fixture(scope="module")
def model(tiny_path):
    loaded = load_gguf(tiny_path, threads=1, context=512)
    yield loaded
    loaded.close()


def text(n: int, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, 510, (n,), generator=torch.Generator().manual_seed(seed))


def steps(model, ids: torch.Tensor, prompt: int, keep: int = 1) -> torch.Tensor:
    """[n, V]: plain decoding of `ids` in a cache of their own: a prompt pass over the first `prompt` (its last `keep`
    rows read), then one token a pass; the rows the prompt pass does not read stay zero (no pass gives a zero row)."""
    reference = torch.zeros(len(ids), model.vocab_size)
    rows = model.rows([0])
    reference[prompt - keep : prompt] = rows.feed([ids[:prompt]], last=keep)[0][0]
    for i in range(prompt, len(ids)):
        reference[i] = rows.feed([ids[i : i + 1]])[0][0, 0]
    return reference


def test_the_model_describes_itself(model):
    assert (model.vocab_size, model.embedding_rows, model.context_length) == (512, 512, 512)
    assert model.traits.runtime == "llama.cpp" and not model.traits.hidden_states and not model.traits.internals
    assert not model.traits.sliding_window and model.device == torch.device("cpu")
    assert (model.bos_token_id, model.eos_token_id) == (510, 511)  # what the file says, no tokenizer
    assert 0 < model.weight_bytes() < model.path.stat().st_size and model.verify_slope() > 0


@pytest.mark.parametrize("k", [2, 5, 6, 7, 8, 13])
def test_a_pass_gives_the_rows_of_one_token_steps(model, k):
    ids = text(9 + k)
    reference = steps(model, ids, prompt=9)
    rows = model.rows([0])
    prompt, _ = rows.feed([ids[:9]])
    together, _ = rows.feed([ids[9:]], last=k)
    assert together.shape == (1, k, 512) and together.dtype == torch.float32
    assert torch.equal(prompt[0, 0], reference[8]) and torch.equal(together[0], reference[9:])
    assert rows.passes == 2 and rows.length(0) == 9 + k


def test_a_ragged_batch_of_three_texts_gives_each_text_its_rows_alone(model):
    texts = [text(14, seed) for seed in (1, 2, 3)]
    alone = [steps(model, t, prompt, keep) for t, prompt, keep in zip(texts, (4, 9, 1), (2, 2, 1))]
    rows = model.rows([7, 3, 5])
    first, _ = rows.feed([texts[0][:4], texts[1][:9], texts[2][:1]], last=2)  # prompts of 4, 9 and 1 tokens
    assert torch.equal(first[0], alone[0][2:4]) and torch.equal(first[1], alone[1][7:9])
    assert torch.equal(first[2, 1], alone[2][0])  # right-aligned: its one row last
    second, _ = rows.feed([texts[0][4:9], None, texts[2][1:4]], last=3)  # row 3 sits this pass out
    assert torch.equal(second[0], alone[0][6:9]) and torch.equal(second[2], alone[2][1:4])
    rows.rollback(7, 7)  # row 7 rejects its last two
    third, _ = rows.feed([texts[0][7:8], texts[1][9:10], texts[2][4:5]])
    for i, (t, at) in enumerate([(0, 7), (1, 9), (2, 4)]):
        assert torch.equal(third[i, 0], alone[t][at])
    rows.compact([5, 7])  # row 3 is done
    fourth, _ = rows.feed([texts[2][5:6], texts[0][8:9]])
    assert rows.rows == [5, 7] and torch.equal(fourth[0, 0], alone[2][5]) and torch.equal(fourth[1, 0], alone[0][8])


def tree_attend(parents: list[int], cached: int) -> tuple[torch.Tensor, torch.Tensor]:
    """attend [n, cached + n] (the text, each node's ancestors and itself) and offsets [n] (depth - 1) of a tree."""
    seen = torch.eye(len(parents), dtype=torch.bool)
    for node, parent in enumerate(parents):
        if parent >= 0:
            seen[node] |= seen[parent]
    return torch.cat([torch.ones(len(parents), cached, dtype=torch.bool), seen], dim=1), seen.sum(dim=1) - 1


def test_a_tree_pass_gives_each_branch_the_rows_of_its_chain_and_keep_goes_on_from_a_branch(model):
    prompt, nodes = text(8, 4), text(10, 5)
    parents = [-1, 0, 1, 2, 2, 0, -1, 6, 7, 8]  # a first root with a bushy subtree, a second root with a chain of 4
    attend, offsets = tree_attend(parents, 8)
    rows = model.rows([0])
    rows.feed([prompt])
    tree, _ = rows.feed([nodes], last=10, attend=[attend], offsets=[offsets])
    for leaf in (3, 4, 5, 9):
        path = [leaf]
        while parents[path[0]] >= 0:
            path.insert(0, parents[path[0]])
        chain = steps(model, torch.cat([prompt, nodes[path]]), prompt=8)
        assert torch.equal(tree[0, path], chain[8:]), f"branch {path}"
    # keep the second root's chain: its cells come after six dropped ones, which must not be reused before it
    rows.keep(0, list(range(8)) + [8 + 6, 8 + 7, 8 + 8, 8 + 9])
    after = text(6, 6)
    reference = steps(model, torch.cat([prompt, nodes[6:], after]), prompt=8)
    going_on = torch.cat([rows.feed([after[i : i + 1]])[0][0] for i in range(6)])
    assert rows.length(0) == 18 and torch.equal(going_on, reference[12:])


def test_a_tree_read_level_by_level_keeps_its_pending_nodes_visible(model):
    prompt, nodes = text(6, 7), text(4, 8)
    rows = model.rows([0])
    rows.feed([prompt])
    level_one = torch.tensor([[1] * 6 + [1, 0], [1] * 6 + [0, 1]], dtype=torch.bool)
    first, _ = rows.feed([nodes[:2]], last=2, attend=[level_one], offsets=[torch.tensor([0, 0])])
    # level two: one child of each, fed while level one is pending; positions 7 = length 8 + offset -1
    level_two = torch.tensor([[1] * 6 + [1, 0] + [1, 0], [1] * 6 + [0, 1] + [0, 1]], dtype=torch.bool)
    second, _ = rows.feed([nodes[2:]], last=2, attend=[level_two], offsets=[torch.tensor([-1, -1])])
    for a, b, row in ((0, 2, 0), (1, 3, 1)):
        chain = steps(model, torch.cat([prompt, nodes[[a, b]]]), prompt=6)
        assert torch.equal(first[0, row], chain[6]) and torch.equal(second[0, row], chain[7])


def test_rollback_then_the_next_row_is_a_fresh_runs(model):
    ids = text(20, 9)
    reference = steps(model, ids, prompt=10)  # the prompt pass's first 10 rows are kept, as a pass of 10 gives them
    rows = model.rows([0])
    rows.feed([ids[:12]])
    rows.rollback(0, 10)
    rows.feed([ids[10:16]], last=6)
    rows.rollback(0, 13)
    assert torch.equal(rows.feed([ids[13:14]])[0][0, 0], reference[13])


def test_a_full_cache_is_repacked_and_stays_exact(tiny_path):
    small = load_gguf(tiny_path, threads=1, context=64)  # 64 cells a text + 256 slack: 512 cells (padded)
    ids = text(40, 10)
    references = [steps(small, ids, prompt=8), steps(small, ids, prompt=5)]
    rows = small.rows([0, 1])
    rows.feed([ids[:8], ids[:5]])
    for _ in range(30):  # 30 rounds of 10 drafted tokens, 9 of them rejected
        for row in (0, 1):
            length = rows.length(row)
            rows.feed(
                [ids[length : length + 10] if row == 0 else None, ids[length : length + 10] if row == 1 else None],
                last=10,
            )
            rows.rollback(row, length + 1 if length < 30 else length)
    assert rows.context.repacks > 0
    last, _ = rows.feed([ids[30:31], ids[30:31]])
    assert torch.equal(last[0, 0], references[0][30]) and torch.equal(last[1, 0], references[1][30])
    del rows
    small.close()


def test_the_self_test_passes_with_the_exact_settings_and_refuses_llama_cpps_defaults(model, tiny_path):
    assert self_test.self_test(model) is None
    defaults = load_gguf(tiny_path, threads=1, context=512, settings=LLAMA_DEFAULTS)
    try:
        reason = self_test.self_test(defaults)
    finally:
        defaults.close()
    assert reason is not None and "other logits than one-token steps" in reason


def test_each_exact_setting_is_needed_on_the_tiny_model(tiny_path):
    """Repacked weights are exact only in ubatches of at most 3 rows:
    4 (their GEMM) and 512 fail; so does attention without flash."""
    for changed in ({"ubatch": 4}, {"flash_attention": 0}, {"ubatch": 512}):
        loose = load_gguf(tiny_path, threads=1, context=512, settings=replace(EXACT, **changed))
        try:
            assert self_test.self_test(loose) is not None, changed
        finally:
            loose.close()


def test_the_verdict_comes_from_a_subprocess_and_is_kept(tmp_path, monkeypatch):
    kept = tmp_path / "self-test.json"
    verdict = self_test.check_machine(threads=1, path=kept)
    assert verdict.usable, verdict.why
    monkeypatch.setattr(self_test, "_run_subprocess", lambda *args: pytest.fail("the kept verdict was not used"))
    assert self_test.check_machine(threads=1, path=kept) == verdict
    saved = json.loads(kept.read_text())
    assert len(saved["verdicts"]) == 1 and saved["library"]["sha256"]


def test_a_corrupt_or_missing_gguf_is_one_line(tiny_path, tmp_path):
    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(tiny_path.read_bytes()[:200_000])
    not_gguf = tmp_path / "notes.gguf"
    not_gguf.write_text("hello")
    for path in (truncated, not_gguf, tmp_path / "missing.gguf"):
        with pytest.raises(SpecdecError) as caught:
            load_gguf(path)
        assert "\n" not in str(caught.value) and str(path.name) in str(caught.value)


def test_hidden_states_and_undrawable_patterns_are_refused_in_one_line(model):
    rows = model.rows([0])
    with pytest.raises(SpecdecError, match="no per-layer hidden states") as caught:
        rows.feed([text(3)], hidden=True)
    assert "\n" not in str(caught.value)
    rows.feed([text(3)])
    sees_a_sibling = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)  # both at position 3
    with pytest.raises(ValueError, match="2 tokens at position 3"):
        rows.feed([text(2)], last=2, attend=[sees_a_sibling], offsets=[torch.tensor([0, 0])])
    assert rows.length(0) == 3


def test_a_library_that_does_not_match_its_declarations_is_refused(monkeypatch):
    loaded = library.load_library()
    defaults = {**declarations.DEFAULTS["llama_model_params"], "use_extra_bufts": 0}
    monkeypatch.setitem(declarations.DEFAULTS, "llama_model_params", defaults)
    with pytest.raises(SpecdecError, match="use_extra_bufts is 1 here, 0 in the header") as caught:
        library.check_declarations(loaded.ffi, loaded.lib)
    assert "\n" not in str(caught.value)


def test_a_missing_wheel_says_what_to_install(monkeypatch):
    monkeypatch.setenv("SPECDEC_LLAMA_LIBRARY", "wheel")  # not a build for this CPU, if one is recorded
    monkeypatch.setattr(library.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(SpecdecError, match="pip install -r requirements.txt"):
        library.library_path()
