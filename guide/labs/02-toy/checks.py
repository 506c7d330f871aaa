"""Checks for lab 2: the enumeration, one round's algorithm and law, and the generator built from rounds.

1. `sequence_distribution` against specdec's enumeration, for a table without zeros and one with zeros
   (every sequence is a key, those of probability zero too).
2. `speculative_round` with Q = P: every draft is kept, so every round emits exactly gamma + 1 tokens (a round
   that never drafts emits 1, one that drops the bonus token emits gamma, one that emits nothing would hang a
   generator), and gamma = 0 emits one token.
3. `speculative_round` with a draft far from P: 3,000 rounds against the exact law of one round, enumerated
   below (which tokens, and how many: a round that drafts from P instead of Q, tests with the wrong q or skips
   the residual has another law).
4. `speculative_generate` is made of your rounds: every token it returns came out of a `speculative_round`
   call after the last token before it (at most one extra call: a prompt pass, if you write one, is a round
   with gamma 0), and it returns exactly `length` tokens.
5. `speculative_generate`'s sequences against the exact law: 3,000 sequences of 4 tokens with gamma 2 (rounds
   2 and 3 are tested too: a bug in what one round hands the next never shows in round 1), and 600 of 2 tokens
   after another start token. Chi-square tests, fixed seeds: the grade is repeatable.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from specdec.reference.rule import markov_sequence_distribution
from specdec.reference.stats import chi_square_test

TIME_LIMIT_S = 60
P = np.array([[0.60, 0.30, 0.10], [0.20, 0.50, 0.30], [0.30, 0.10, 0.60]])   # p(next | previous)
Q = np.array([[0.10, 0.20, 0.70], [0.50, 0.20, 0.30], [0.40, 0.50, 0.10]])   # q(next | previous), far from P
ZEROS = np.array([[0.50, 0.50, 0.00], [0.00, 0.00, 1.00], [0.25, 0.00, 0.75]])   # a table with impossible steps
START, LENGTH, GAMMA, RUNS, ROUNDS = 0, 4, 2, 3_000, 3_000
SAMPLED = ((START, LENGTH, RUNS), (2, 2, 600))                  # (start token, tokens per sequence, sequences)


def round_law(target: np.ndarray, draft: np.ndarray, previous: int, gamma: int) -> dict[tuple[int, ...], float]:
    """The exact law of what one round emits after `previous`: drafts x ~ draft, kept with min(1, p/q), so an x is
    drafted and kept with chance min(p(x), q(x)); a rejection emits y with chance max(0, p(y) - q(y)); the bonus y
    after gamma kept drafts with chance p(y).

    >>> law = round_law(np.array([[0.5, 0.5], [0.5, 0.5]]), np.array([[1.0, 0.0], [1.0, 0.0]]), 0, 1)
    >>> law[(0, 0)], law[(0, 1)], law[(1,)]
    (0.25, 0.25, 0.5)
    """
    law: Counter = Counter()

    def walk(context: int, left: int, prefix: tuple[int, ...], chance: float) -> None:
        if left == 0:
            for y in np.flatnonzero(target[context] > 0):
                law[prefix + (int(y),)] += chance * target[context, y]
            return
        for x in np.flatnonzero(np.minimum(target[context], draft[context]) > 0):
            walk(int(x), left - 1, prefix + (int(x),), chance * min(target[context, x], draft[context, x]))
        for y in np.flatnonzero(target[context] > draft[context]):
            law[prefix + (int(y),)] += chance * (target[context, y] - draft[context, y])

    walk(previous, gamma, (), 1.0)
    return dict(law)


def enumeration_problems(module) -> list[str]:
    for name, table, start, length in (("P", P, START, 1), ("P", P, START, 3), ("Q", Q, 2, 2), ("a table with zeros", ZEROS, 0, 3)):
        yours = module.sequence_distribution(table, start, length)
        truth = markov_sequence_distribution(table, start, length)
        call = f"sequence_distribution({name}, {start}, {length})"
        if set(yours) != set(truth):
            return [f"{call} has {len(yours)} keys; it needs all {len(truth)} sequences, those of probability zero too"]
        wrong = [key for key in truth if not np.isclose(yours[key], truth[key], atol=1e-12)]
        if wrong:
            return [f"{call}: the chance of {wrong[0]} should be {truth[wrong[0]]:.4f}, yours says {yours[wrong[0]]:.4f}"]
    return []


def round_problems(module) -> list[str]:
    rng = np.random.default_rng(11)
    for previous in (0, 1, 2):
        for _ in range(20):
            emitted = list(module.speculative_round(P, P.copy(), previous, GAMMA, rng))
            if len(emitted) != GAMMA + 1:
                why = {0: "it emitted no token: a round always emits one (from the residual, or the bonus token)",
                       1: "it emitted 1: does it draft at all?",
                       GAMMA: "the bonus token is missing"}.get(len(emitted), "")
                return [f"with Q = P every draft is kept, so a round emits gamma + 1 = {GAMMA + 1} tokens; "
                        f"speculative_round(P, P, {previous}, {GAMMA}, rng) emitted {emitted}: {why}".rstrip(": ")]
        emitted = list(module.speculative_round(P, Q, previous, 0, rng))
        if len(emitted) != 1:
            return [f"speculative_round(P, Q, {previous}, 0, rng) emitted {emitted}: with gamma = 0 a round is one token from P"]
    for previous in (0, 2):
        counts = Counter(tuple(int(t) for t in module.speculative_round(P, Q, previous, GAMMA, rng)) for _ in range(ROUNDS))
        fit = chi_square_test(counts, round_law(P, Q, previous, GAMMA))
        if fit.p_value < 1e-4:
            lengths = Counter(len(run) for run in counts.elements())
            return [f"your {ROUNDS} rounds after token {previous} (gamma {GAMMA}, Q far from P) do not follow the exact law of a "
                    f"round (chi-square p-value {fit.p_value:.1e}; round lengths {dict(sorted(lengths.items()))}): check that "
                    "the drafts come from Q, the test min(1, p(x) / q(x)) with q from Q, the residual and the bonus token"]
    return []


def generator_problems(module) -> list[str]:
    """speculative_generate must be made of speculative_round calls, each after the last token so far."""
    real, calls = module.speculative_round, []

    def recorded(P_, Q_, previous, gamma, rng):
        emitted = [int(t) for t in real(P_, Q_, previous, gamma, rng)]
        calls.append((int(previous), int(gamma), emitted))
        return emitted

    module.speculative_round = recorded
    try:
        length = 3 * (GAMMA + 1) + 1
        tokens = [int(t) for t in module.speculative_generate(P, P.copy(), START, length, GAMMA, np.random.default_rng(12))]
    finally:
        module.speculative_round = real
    if len(tokens) != length:
        return [f"speculative_generate(P, P, {START}, {length}, ...) must return exactly {length} tokens, yours returned {len(tokens)}"]
    if not calls:
        return ["speculative_generate never called speculative_round: build the text from rounds"]
    text = [START]
    for previous, gamma, emitted in calls:
        if previous != text[-1]:
            return [f"a round was started after token {previous}, but the text so far ends with {text[-1]}: each round starts "
                    "after the last token emitted (not after the start token)"]
        if gamma > GAMMA:
            return [f"a round was asked for {gamma} drafts, more than gamma = {GAMMA}"]
        text += emitted
    if tokens != text[1:1 + length]:
        return [f"speculative_generate returned {tokens}, but its rounds emitted {text[1:]}: return what the rounds emit, in order"]
    if len(calls) > -(-length // (GAMMA + 1)) + 1:
        return [f"{len(calls)} rounds for {length} tokens with Q = P (every round could emit {GAMMA + 1}): ask each round for gamma drafts"]
    return []


def grade(module) -> list[str]:
    problems = enumeration_problems(module) or round_problems(module) or generator_problems(module)
    if problems:
        return problems
    rng = np.random.default_rng(7)
    for start, length, count in SAMPLED:
        runs = [tuple(module.speculative_generate(P, Q, start, length, GAMMA, rng)) for _ in range(count)]
        if any(len(run) != length for run in runs):
            return [f"speculative_generate(P, Q, {start}, {length}, ...) must return exactly {length} tokens"]
        fit = chi_square_test(Counter(runs), markov_sequence_distribution(P, start, length))
        if fit.p_value < 1e-4:
            problems.append(f"your {count} sequences of {length} tokens after token {start} do not follow P "
                            f"(chi-square p-value {fit.p_value:.1e}): check the residual, the bonus token, "
                            "and where each round starts")
    return problems
