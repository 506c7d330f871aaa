"""pages.common.trace and specdec.bench.comparison: what the
Playground shows about one run, checked by hand and on real runs."""

from __future__ import annotations

import math

import pytest
import torch

from pages.common.trace import SpanKind, count_kinds, trace
from specdec.bench.comparison import RunComparison, first_difference, greedy_check
from specdec.drafting.prompt_lookup import PromptLookupDrafter
from specdec.engine.results import DraftedToken, GenerationResult, GenerationStats, Round
from specdec.engine.results import TokenOrigin as O
from specdec.pair.running import speculative_generate
from specdec.reference.theory import expected_tokens_per_pass

WORDS = {1: "<eos>", 5: " The", 6: " cat", 7: " dog", 8: " sat", 9: " on", 10: " the", 11: " mat"}


def words(ids: list[int]) -> str:
    return "".join(WORDS[i] for i in ids)


def stats(new_tokens: int = 6, drafted: int = 6, accepted: int = 4, rejections: int = 1) -> GenerationStats:
    return GenerationStats(
        new_tokens,
        drafted,
        accepted,
        target_passes=3,
        draft_passes=6,
        wall_time_s=2.0,
        draft_time_s=0.5,
        verify_time_s=1.2,
        rejections=rejections,
    )


def hand_worked() -> GenerationResult:
    """Prompt pass: ' The'. Round 1: ' cat' accepted, ' dog' rejected (' sat' never tested), ' sat' resampled.
    Round 2: ' on' ' the' ' mat' all accepted, then a bonus <eos>."""
    rounds = (
        Round((), 0, 5, O.TARGET, ((5, O.TARGET),)),
        Round(
            (
                DraftedToken(6, 0.8, 0.5, 0.2, True),
                DraftedToken(7, 0.1, 0.4, 0.9, False),
                DraftedToken(8, 0.5, 0.5, None, None),
            ),
            1,
            8,
            O.RESAMPLED,
            ((6, O.ACCEPTED), (8, O.RESAMPLED)),
        ),
        Round(
            (
                DraftedToken(9, 0.9, 0.9, 0.5, True),
                DraftedToken(10, 0.7, 0.6, 0.3, True),
                DraftedToken(11, 0.6, 0.8, 0.1, True),
            ),
            3,
            1,
            O.BONUS,
            ((9, O.ACCEPTED), (10, O.ACCEPTED), (11, O.ACCEPTED), (1, O.BONUS)),
        ),
    )
    return GenerationResult([5, 6, 8, 9, 10, 11, 1], stats(7, 6, 4), rounds)


def test_spans_of_a_hand_worked_run():
    spans = trace(hand_worked(), words).spans
    assert [(span.text, span.kind.value, span.round_index) for span in spans] == [
        (" The", "target", 0),
        (" cat", "accepted", 1),
        (" dog", "rejected", 1),
        (" sat", "resampled", 1),
        (" on", "accepted", 2),
        (" the", "accepted", 2),
        (" mat", "accepted", 2),
        ("<eos>", "bonus", 2),
    ]
    rejected = spans[2]
    assert (rejected.p, rejected.q, rejected.u, rejected.ratio) == (0.1, 0.4, 0.9, 0.25)
    assert not rejected.in_output and spans[3].replaces == " dog"
    assert "u = 0.900 >= p/q = 0.250" in rejected.explain() and "' dog'" in spans[3].explain()
    assert spans[1].explain() == "accepted: u = 0.200 < p/q = 1.600 (p = 0.800, q = 0.500)"
    assert count_kinds(spans) == {"accepted": 4, "rejected": 1, "resampled": 1, "bonus": 1, "target": 1}


def test_round_rows_of_a_hand_worked_run():
    rows = trace(hand_worked(), words).rows
    assert [(row.drafted, row.accepted, row.drafted_count, row.added, row.added_kind, row.emitted) for row in rows] == [
        ("", 0, 0, "␣The", "target", 1),
        ("✓␣cat ✗␣dog ·␣sat", 1, 3, "␣sat", "resampled", 2),
        ("✓␣on ✓␣the ✓␣mat", 3, 3, "<eos>", "bonus", 4),
    ]


def test_a_round_cut_at_end_of_text_shows_no_added_token():
    rounds = (
        Round((), 0, 5, O.TARGET, ((5, O.TARGET),)),
        Round(
            (DraftedToken(1, 0.9, 0.9, 0.1, True), DraftedToken(6, 0.9, 0.9, 0.1, True)),
            2,
            7,
            O.BONUS,
            ((1, O.ACCEPTED),),
        ),
    )
    result = GenerationResult([5, 1], stats(2, 2, 2), rounds)
    assert [span.kind for span in trace(result, words).spans] == [SpanKind.TARGET, SpanKind.ACCEPTED]
    assert trace(result, words).rows[1].added_kind == "(stopped at end of text)"


def test_a_character_split_over_two_tokens_is_shown_once_complete():
    pieces = {1: b"caf", 2: b"\xc3", 3: b"\xa9", 4: b"!"}  # "é" is two bytes, two tokens

    def decode(ids):
        return b"".join(pieces[i] for i in ids).decode("utf-8", errors="replace")

    result = GenerationResult([1, 2, 3, 4], stats(4, 0, 0))  # plain decoding: no rounds
    spans = trace(result, decode).spans
    assert [span.text for span in spans] == ["caf", "", "é", "!"]
    assert all(span.kind is SpanKind.TARGET for span in spans)


@pytest.mark.parametrize("architecture", ["gpt2", "llama"])
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_spans_of_real_runs_rebuild_the_output(pairs, architecture, temperature):
    from tiny_models import tiny_tokenizer

    target, draft = pairs[architecture]
    tokenizer = tiny_tokenizer(24)
    result = speculative_generate(
        target, draft, torch.tensor([2, 3, 4, 5]), gamma=4, max_new_tokens=40, temperature=temperature, seed=3
    )
    spans = trace(result, tokenizer.decode).spans
    output = [span for span in spans if span.in_output]
    assert [span.token for span in output] == result.tokens
    assert [span.kind.value for span in output] == [origin.value for origin in result.origins()]
    assert "".join(span.text for span in output) == tokenizer.decode(result.tokens)
    rejected = [span for span in spans if span.kind is SpanKind.REJECTED]
    assert len(rejected) == sum(1 for round_ in result.rounds if round_.next_origin is O.RESAMPLED)
    assert len(rejected) > 0  # the tiny draft is wrong often enough
    if temperature > 0:
        assert all(span.u >= span.ratio for span in rejected)  # the rule: reject when u >= p/q
        assert all(span.u < span.ratio for span in output if span.kind is SpanKind.ACCEPTED)
    rows = trace(result, tokenizer.decode).rows
    assert sum(row.emitted for row in rows) == len(result.tokens) and len(rows) == len(result.rounds)


def test_prompt_lookup_spans_have_point_mass_q(pairs):
    target, _ = pairs["gpt2"]
    prompt = torch.tensor([2, 3, 4, 5, 2, 3, 4, 5, 2, 3])
    result = speculative_generate(
        target, PromptLookupDrafter(), prompt, gamma=3, max_new_tokens=30, temperature=1.0, seed=0
    )
    drafted = [span for span in trace(result, lambda ids: " ".join(map(str, ids))).spans if span.q is not None]
    assert drafted and all(span.q == 1.0 and span.ratio == span.p for span in drafted)


def test_comparison_numbers():
    speculative, plain = stats(), GenerationStats(6, 0, 0, 6, 0, 3.0, 0.0, 2.9)
    comparison = RunComparison(speculative, plain, gamma=3)
    assert comparison.wall_clock_speedup == 1.5
    assert comparison.predicted_tokens_per_pass == expected_tokens_per_pass(4 / 5, 3)  # alpha: 4 accepted of 5 tested
    split = comparison.time_split()
    assert [share.name for share in split] == ["draft", "verify", "other"]
    assert [share.seconds for share in split] == pytest.approx([0.5, 1.2, 0.3])
    assert sum(share.share for share in split) == pytest.approx(1.0)
    assert math.isnan(RunComparison(speculative, None, 3).wall_clock_speedup)
    assert math.isnan(RunComparison(stats(6, 0, 0, 0), None, 3).predicted_tokens_per_pass)


def test_greedy_check_wording_follows_the_dtype():
    assert greedy_check([1, 2, 3], [1, 2, 3], "float32").identical
    assert first_difference([1, 2, 3], [1, 9, 3]) == 1
    rounding = greedy_check([1, 2, 3], [1, 9, 3], "bfloat16")
    assert (rounding.verdict, rounding.first_difference) == ("rounding", 1) and "float32" in rounding.message
    suspect = greedy_check([1, 2], [1, 2, 3], "float32")
    assert (suspect.verdict, suspect.first_difference) == ("suspect", 2) and "bug" in suspect.message
    near_tie = greedy_check([1, 2, 3], [1, 9, 3], "float32", margin=3e-6)
    assert near_tie.verdict == "rounding" and "near-tie" in near_tie.message and "3e-06" in near_tie.message
    clear_choice = greedy_check([1, 2, 3], [1, 9, 3], "float32", margin=0.8)
    assert clear_choice.verdict == "suspect" and "0.8" in clear_choice.message


def test_each_round_says_where_its_time_went():
    """Round.draft_s and verify_s: the per-round split the
    Playground's timeline draws, adding up to the run's totals."""
    import torch
    from tiny_models import tiny_pair

    from specdec import speculative_generate

    target, draft = tiny_pair("llama")
    result = speculative_generate(target, draft, torch.tensor([2, 3, 4]), max_new_tokens=24, gamma=3)
    first, rest = result.rounds[0], result.rounds[1:]
    assert first.draft_s == 0.0 and first.verify_s > 0  # the prompt pass
    assert all(r.draft_s > 0 and r.verify_s > 0 for r in rest)
    assert sum(r.draft_s for r in result.rounds) == pytest.approx(result.stats.draft_time_s, rel=1e-9)
    assert sum(r.verify_s for r in result.rounds) == pytest.approx(result.stats.verify_time_s, rel=1e-9)
