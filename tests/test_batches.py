"""Batches: every row exact on its own, whatever its neighbours accept (`specdec.engine.loop`,
`specdec.runtime.pytorch.batch_cache`).

Against the trusted references:
- greedy: every row equals its own plain decoding alone, for prompts of different lengths, rows that end
  early (an end-of-sequence token) beside rows that run to max_new_tokens, rows that accept very
  different numbers of tokens (one row's drafts are the target's own tokens, another's are noise), with
  a draft model and the model-free drafters (chains, trees, lookahead's extra rows), three architectures;
- after every round each row's cache holds exactly its text but the last token, with the keys and
  values a fresh pass over that text gives;
- sampling: each row's distribution equals the target's for its prompt (chi-square against
  enumeration), two rows with the same prompt are independent draws, and the classic bug (every row's
  cache advanced by the same count, `specdec.bugs.batches`) fails the same tests;
- a batch of one equals today's single-text run token for token, greedy and sampled with a seed, and rows
  of neighbouring seeds share no random stream;
- bad input gets one clear line.
"""

import pytest
import torch
from distribution_check import SIGNIFICANCE, exact_distribution
from test_bench import tiny_catalogue  # noqa: F401  (a fixture: tiny-d and tiny-t in the zoo's catalogue)
from tiny_models import target_cache_as, tiny_model, tiny_pair

from specdec import (
    LookaheadDrafter,
    PromptLookupDrafter,
    SpecdecError,
    SuffixDrafter,
    TokenRecyclingDrafter,
    TreeDrafter,
    autoregressive_generate,
    speculative_generate,
)
from specdec import ModelDrafter, batch_throughput
from specdec.runtime.pytorch.batch_cache import BatchCache
from specdec.engine.contract import Capabilities
from specdec.engine.inputs import Decoding, row_generator
from specdec.engine.sampling import SamplingConfig
from specdec.engine.trees import DraftTree
from specdec.bugs.batches import generate_with_one_count
from specdec.reference.stats import chi_square_test

ARCHITECTURES = ("gpt2", "llama", "qwen2")
PROMPTS = [[2, 3, 4, 5, 6, 7, 8, 9, 10], [11, 12], [13, 2, 14, 3, 15], [4]]
NEW = 24


def plain(target, prompt, **options):
    return autoregressive_generate(target, torch.tensor(prompt), temperature=0, **options).tokens


class Oracle:
    """A model-free test drafter: for prompts starting with token 2 it drafts the target's own greedy tokens (all
    accepted), for the others a fixed wrong token (almost all rejected)."""

    name, draft_model = "oracle", None
    capabilities = Capabilities()

    def __init__(self, answers: dict[tuple[int, ...], list[int]]) -> None:
        self.answers, self.prompts = answers, {}

    def begin(self, generation):
        self.prompts = {row: tuple(prompt.tolist()) for row, prompt in generation.prompts.items()}

    def passes(self, row):
        return 0

    def draft(self, requests):
        return {
            row: self.propose(self.prompts[row], request.sequence, request.limit) for row, request in requests.items()
        }

    def propose(self, prompt, sequence, gamma):
        done = sequence.numel() - len(prompt)
        if prompt[0] == 2:
            tokens = self.answers[prompt][done : done + gamma]
        else:
            tokens = [(self.answers[prompt][done] + 1) % 24] * gamma if done < len(self.answers[prompt]) else []
        return DraftTree.chain(torch.tensor(tokens[:gamma], dtype=torch.long))

    def observe(self, verified):
        pass


def with_cache(monkeypatch, target, cache_type):
    """Every run builds its target's cache of several rows as `cache_type` (a broken or checking `BatchCache`)."""
    target_cache_as(monkeypatch, target, cache_type)


@pytest.fixture(scope="module")
def pairs():
    return {architecture: tiny_pair(architecture) for architecture in ARCHITECTURES}


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_every_row_equals_its_own_greedy_run(pairs, architecture):
    target, draft = pairs[architecture]
    expected = [plain(target, prompt, max_new_tokens=NEW) for prompt in PROMPTS]
    # ends row 2, not every row
    stop = next(token for token in expected[2] if any(token not in tokens for tokens in expected))
    expected_stopped = [plain(target, prompt, max_new_tokens=NEW, eos_token_id=stop) for prompt in PROMPTS]
    assert any(len(tokens) < NEW for tokens in expected_stopped) and any(
        len(tokens) == NEW for tokens in expected_stopped
    )
    for drafter in (draft, PromptLookupDrafter(), TokenRecyclingDrafter(), SuffixDrafter(), LookaheadDrafter()):
        results = speculative_generate(
            target, drafter, [torch.tensor(p) for p in PROMPTS], max_new_tokens=NEW, temperature=0
        )
        assert [r.tokens for r in results] == expected, type(drafter).__name__
        stopped = speculative_generate(target, drafter, PROMPTS, max_new_tokens=NEW, temperature=0, eos_token_id=stop)
        assert [r.tokens for r in stopped] == expected_stopped, type(drafter).__name__
    fixed = speculative_generate(target, draft, PROMPTS, gamma=5, max_new_tokens=NEW, temperature=0)
    assert [r.tokens for r in fixed] == expected
    assert sum(r.stats.accepted for r in fixed) > 0  # the draft really drafted and was really accepted


def test_a_batch_drafted_with_a_vocabulary_limit_is_exact_and_refuses_what_a_single_run_refuses(pairs):
    import copy

    from specdec import ModelDrafter

    target, draft = pairs["llama"]
    expected = [plain(target, prompt, max_new_tokens=NEW) for prompt in PROMPTS]
    limited = speculative_generate(
        target, ModelDrafter(draft, vocab_limit=12), PROMPTS, max_new_tokens=NEW, temperature=0
    )
    assert [r.tokens for r in limited] == expected
    capped = copy.deepcopy(draft)
    capped.config.final_logit_softcapping = 30.0  # its logits are capped after the output layer
    with pytest.raises(SpecdecError, match="cannot restrict the output layer"):
        speculative_generate(target, ModelDrafter(capped, vocab_limit=12), PROMPTS, max_new_tokens=4, temperature=0)
    with pytest.raises(SpecdecError, match="cannot restrict the output layer"):  # the batch's own cache, as CachedModel
        BatchCache(capped, 2, output_rows=12)


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_rows_that_accept_very_differently_stay_exact_and_the_classic_bug_does_not(pairs, architecture):
    target, _ = pairs[architecture]
    answers = {tuple(p): plain(target, p, max_new_tokens=NEW) for p in PROMPTS}
    results = speculative_generate(target, Oracle(answers), PROMPTS, gamma=4, max_new_tokens=NEW, temperature=0)
    assert [r.tokens for r in results] == list(answers.values())
    assert results[0].stats.acceptance_rate == 1.0  # the oracle row accepts everything ...
    assert all(r.stats.acceptance_rate < 0.2 for r in results[1:])  # ... the noise rows almost nothing
    rounds = generate_with_one_count(
        target, Oracle(answers), [torch.tensor(p) for p in PROMPTS], 4, Decoding(NEW, temperature=0)
    )
    broken = [[token for round_ in row for token, _ in round_.emitted] for row in rounds]
    assert broken[0] == answers[tuple(PROMPTS[0])]  # the row that kept most is right ...
    # ... the others read rejected drafts
    assert any(tokens != answers[tuple(p)] for tokens, p in zip(broken[1:], PROMPTS[1:]))


class CheckedCache(BatchCache):
    """A batch cache that, whenever rows are settled, checks every row against a fresh pass over the text it holds."""

    texts: dict[int, list[int]] = {}
    checks = 0

    def compact(self, rows=None):
        super().compact(rows)
        for i, row in enumerate(self.rows):
            held = self.text(row)
            assert held == CheckedCache.texts[row][:-1]  # the text but its last token
            fresh = self.model(input_ids=torch.tensor([held]), use_cache=True).past_key_values
            for layer, fresh_layer in zip(self.cache.layers, fresh.layers):
                keys = layer.keys[i][:, self.valid[i]]  # [heads, length, head_dim]
                torch.testing.assert_close(keys, fresh_layer.keys[0], atol=1e-5, rtol=1e-4)
                torch.testing.assert_close(
                    layer.values[i][:, self.valid[i]], fresh_layer.values[0], atol=1e-5, rtol=1e-4
                )
            CheckedCache.checks += 1


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_each_rows_cache_equals_a_fresh_pass_after_every_round(pairs, architecture, monkeypatch):
    target, draft = pairs[architecture]
    with_cache(monkeypatch, target, CheckedCache)
    for drafter in (draft, TokenRecyclingDrafter()):
        CheckedCache.texts = {row: list(prompt) for row, prompt in enumerate(PROMPTS)}
        CheckedCache.checks = 0

        def follow(row, round_):
            CheckedCache.texts[row] += [token for token, _ in round_.emitted]

        speculative_generate(
            target, drafter, [torch.tensor(p) for p in PROMPTS], max_new_tokens=12, temperature=0, on_round=follow
        )
        assert CheckedCache.checks >= 3 * len(PROMPTS)


@pytest.mark.parametrize("sampled", [False, True])
def test_a_batch_of_one_is_todays_single_run(pairs, sampled):
    target, draft = pairs["llama"]
    options = dict(max_new_tokens=20, temperature=1.0 if sampled else 0, seed=7)
    # fresh: recycling keeps its table across texts
    for fresh in (lambda: draft, PromptLookupDrafter, TokenRecyclingDrafter):
        alone = speculative_generate(target, fresh(), torch.tensor(PROMPTS[0]), **options)
        (batched,) = speculative_generate(target, fresh(), [PROMPTS[0]], **options)
        assert batched.tokens == alone.tokens and batched.origins() == alone.origins()
        assert [len(r.drafted) for r in batched.rounds] == [len(r.drafted) for r in alone.rounds]
        assert batched.stats.target_passes == alone.stats.target_passes
    (plain_batched,) = autoregressive_generate(target, [PROMPTS[0]], **options)
    assert plain_batched.tokens == autoregressive_generate(target, torch.tensor(PROMPTS[0]), **options).tokens


def test_rows_of_neighbouring_seeds_share_no_random_stream():
    """Row b of seed s draws from SeedSequence([s, b]): no (seed, row) pair repeats another's stream (seed + b would:
    row 1 of seed s was row 0 of seed s + 1)."""
    streams = {
        (seed, row): tuple(torch.rand(8, generator=row_generator(seed, row)).tolist())
        for seed in range(20)
        for row in range(20)
    }
    assert len(set(streams.values())) == len(streams)
    firsts = [stream[0] for stream in streams.values()]
    assert len(set(firsts)) == len(firsts)  # not even one draw in common


def test_a_padded_tensor_with_its_mask_is_the_same_batch(pairs):
    target, draft = pairs["gpt2"]
    width = max(map(len, PROMPTS))
    left = torch.tensor([[0] * (width - len(p)) + p for p in PROMPTS])
    right = torch.tensor([p + [0] * (width - len(p)) for p in PROMPTS])
    mask_left = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in PROMPTS])
    mask_right = torch.tensor([[1] * len(p) + [0] * (width - len(p)) for p in PROMPTS])
    expected = [plain(target, p, max_new_tokens=10) for p in PROMPTS]
    for ids, mask in ((left, mask_left), (right, mask_right)):
        assert [
            r.tokens
            for r in speculative_generate(target, draft, ids, attention_mask=mask, max_new_tokens=10, temperature=0)
        ] == expected
        assert [
            r.tokens
            for r in autoregressive_generate(target, ids, attention_mask=mask, max_new_tokens=10, temperature=0)
        ] == expected


def test_each_row_reports_its_own_counts_and_the_batch_its_throughput(pairs):
    target, draft = pairs["qwen2"]
    results = speculative_generate(target, draft, PROMPTS, gamma=3, max_new_tokens=NEW, temperature=0)
    for result in results:
        rounds = result.rounds
        assert result.stats.new_tokens == len(result.tokens) == NEW
        assert result.stats.target_passes == len(rounds)  # the prompt pass and one pass per round
        assert result.stats.drafted == sum(len(r.drafted) for r in rounds) and result.drafting == "chain, gamma 3"
    assert len({r.stats.wall_time_s for r in results}) == 1  # one batch, one wall time
    assert batch_throughput(results) == pytest.approx(len(PROMPTS) * NEW / results[0].stats.wall_time_s)


# ---- sampling: each row has the target's distribution, rows are independent, the classic bug is caught

SAMPLE_PROMPTS = [[2, 3, 4], [5, 6], [2, 3, 4]]  # rows 0 and 2 share a prompt: their draws must be independent
LENGTH = 4  # tokens per row: gamma 1 makes the rounds 2..4 hinge on earlier ones
RUNS = 2500  # samples of each row: the classic bug's power (tests/test_power.py)


def batched_samples(target, draft, sampling, runs=RUNS, one_count=False):
    """`runs` samples of each row of SAMPLE_PROMPTS, all in ONE batch of 3 x runs rows (rows 3i..3i+2 are sample i)."""
    prompts = [torch.tensor(p) for p in SAMPLE_PROMPTS] * runs
    decoding = Decoding(LENGTH, sampling.temperature, sampling.top_k, sampling.top_p, seed=0)
    if one_count:
        rounds = generate_with_one_count(target, ModelDrafter(draft), prompts, 1, decoding)
        tokens = [tuple(token for round_ in row for token, _ in round_.emitted) for row in rounds]
    else:
        tokens = [
            tuple(r.tokens) for r in speculative_generate(target, draft, prompts, gamma=1, **decoding.as_kwargs())
        ]
    return [tokens[i : i + len(SAMPLE_PROMPTS)] for i in range(0, len(tokens), len(SAMPLE_PROMPTS))]


def row_fits(target, samples, sampling):
    from collections import Counter

    fits = []
    for row, prompt in enumerate(SAMPLE_PROMPTS):
        exact = exact_distribution(target, prompt, LENGTH, sampling, skip_first=False)
        fits.append(chi_square_test(Counter(sample[row] for sample in samples), exact))
    return fits


@pytest.fixture(scope="module")
def sampling_pair():
    return tiny_pair("llama", vocab_size=8, seed=2, noise=1.0)


@pytest.mark.slow
@pytest.mark.parametrize(
    "sampling", [SamplingConfig(temperature=1.0), SamplingConfig(temperature=0.8, top_k=4)], ids=["t1.0", "top_k4"]
)
def test_each_rows_distribution_is_the_targets_and_rows_are_independent(sampling_pair, sampling):
    from collections import Counter

    target, draft = sampling_pair
    samples = batched_samples(target, draft, sampling)
    fits = row_fits(target, samples, sampling)
    assert all(fit.p_value > SIGNIFICANCE for fit in fits), fits
    # rows 0 and 2: independent draws
    first = exact_distribution(target, SAMPLE_PROMPTS[0], 1, sampling, skip_first=False)
    joint = {(a, b): first[(a,)] * first[(b,)] for (a,) in first for (b,) in first}
    pairs_fit = chi_square_test(Counter((sample[0][0], sample[2][0]) for sample in samples), joint)
    assert pairs_fit.p_value > SIGNIFICANCE, pairs_fit


@pytest.mark.slow
def test_the_classic_bug_changes_the_distribution(sampling_pair):
    """Power: one count for the batch moves each row's distribution by D = 0.100, 0.077 and 0.069 (statistics 192, 144
    and 146 at 1,500 samples a row). At RUNS = 2,500 the weakest row alone has mean 42 + 2,500 x 0.069 = 215 against the
    p = 1e-3 threshold of 76: power above 0.999 with D a third smaller (at 1,500 it was 0.97)."""
    target, draft = sampling_pair
    sampling = SamplingConfig(temperature=1.0)
    fits = row_fits(target, batched_samples(target, draft, sampling, one_count=True), sampling)
    assert min(fit.p_value for fit in fits) < SIGNIFICANCE, fits


# ---- bad input


def test_bad_batches_get_one_clear_line(pairs):
    target, draft = pairs["gpt2"]
    cases = [
        (lambda: speculative_generate(target, draft, []), "empty"),
        (lambda: speculative_generate(target, draft, [[2, 3], []]), "empty"),
        (lambda: speculative_generate(target, draft, [[2, 3]], attention_mask=torch.ones(1, 2)), "not both"),
        (
            lambda: speculative_generate(
                target, draft, torch.tensor([[2, 3], [4, 5]]), attention_mask=torch.ones(2, 3)
            ),
            "shape",
        ),
        (lambda: speculative_generate(target, TreeDrafter(draft), [[2, 3], [4]]), None),
        (lambda: speculative_generate(target, PromptLookupDrafter(), [[2, 3], [4]], gamma=3), None),
        (lambda: speculative_generate(target, TokenRecyclingDrafter(), [[2, 3], [4]], gamma=3), "leave gamma out"),
        (lambda: autoregressive_generate(tiny_model("gemma3"), [[2, 3], [4]]), "sliding-window"),
    ]
    for call, message in cases:
        if message is None:
            assert len(call()) == 2
            continue
        with pytest.raises(SpecdecError, match=message) as error:
            call()
        assert "\n" not in str(error.value)


# ---- the benchmark, the CLI and the charts


def test_the_batch_benchmark_runs_the_same_prompts_at_every_size(pairs):
    from tiny_models import tiny_tokenizer

    from specdec.bench.batches import batch_benchmark, batch_table
    from specdec.bench.charts import benchmark_figures
    from specdec.bench.load_charts import batch_figure
    from specdec.engine.inputs import Decoding
    from specdec.pair.resources import LoadedPair

    target, draft = pairs["gpt2"]
    pair = LoadedPair.from_models("tiny-target", "tiny-draft", target, draft, tiny_tokenizer(24))
    seen = []
    frame = batch_benchmark(
        pair,
        (1, 2, 4),
        Decoding(max_new_tokens=8, temperature=0),
        progress=lambda d, t, m: seen.append(m),
        gammas=("stop", 2),
    )
    assert len(frame) == 9 and set(frame["batch_size"]) == {1, 2, 4} and (frame["prompts"] == 4).all()
    assert set(frame["variant"]) == {"plain", "speculative, stop rule", "speculative, gamma 2"}
    assert (frame["new_tokens"] == 4 * 8).all()  # the same work at every size
    speculative = frame[frame["method"] == "speculative"]
    assert speculative["exact"].all() and (frame[frame["method"] == "plain"]["speedup"] == 1).all()
    assert (frame[frame["batch_size"] == 1]["scaling"] == 1).all()
    assert (speculative["tokens_per_target_pass"] > 1).all() and seen[-1] == "done"
    table = batch_table(frame)
    assert list(table["batch_size"]) == [1] * 3 + [2] * 3 + [4] * 3 and (table["gain"] > 0).all()
    assert (
        table[table["variant"] != "plain"]["exact"].all()
        and (table[table["variant"] == "plain"]["pass_over_plain"] == 1).all()
    )
    assert list(benchmark_figures(frame)) == ["batches"]
    assert len(batch_figure(frame).data) == 5  # 3 throughputs, 2 gains


def test_bench_batch_sizes_on_the_command_line(tmp_path, capsys, tiny_catalogue):
    from specdec.bench.tables import load_csv
    from specdec.cli import main

    code = main(
        [
            "bench",
            "--pairs",
            "tiny-d->tiny-t",
            "--batch-sizes",
            "1,2",
            "--max-new-tokens",
            "6",
            "--device",
            "cpu",
            "--out",
            str(tmp_path / "b.csv"),
            "--figure",
            str(tmp_path / "b.html"),
            "--markdown",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "per batch size" in out and "| pair | batch_size |" in out
    assert (
        len(load_csv(tmp_path / "b.csv")) == 4
        and "variant" in load_csv(tmp_path / "b.csv")
        and (tmp_path / "b.html").stat().st_size > 10_000
    )
    assert main(["bench", "--from-csv", str(tmp_path / "b.csv")]) == 0 and "per batch size" in capsys.readouterr().out
    for argv in (
        ["bench", "--batch-sizes", "0"],
        ["bench", "--batch-sizes", "1,x"],
        ["bench", "--batch-sizes", "2", "--pairs", "tiny-d->tiny-t", "tiny-d->tiny-t"],
    ):
        try:
            code = main(argv)
        except SystemExit as exit_:
            code = exit_.code
        assert code == 2, argv
