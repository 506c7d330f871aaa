"""Checks for lab 2: the enumeration, one round's algorithm and law, and the generator built from rounds.

1. `sequence_distribution` against specdec's enumeration, for a table without zeros and one with zeros
   (every sequence is a key, those of probability zero too).
2. `speculative_round` with Q = P: every draft is kept, so every round emits exactly gamma + 1 tokens (a round
   that never drafts emits 1, one that drops the bonus token emits gamma, one that emits nothing would hang a
   generator), and gamma = 0 emits one token.
3. `speculative_round` with a draft far from P: its law, computed exactly by driving it with a controlled
   random source (`controlled_random.driven_law`), against the exact law of one round, enumerated below (which
   tokens, and how many: a round that drafts from P instead of Q, tests with the wrong q or skips the residual has
   another law), after every token and for every gamma up to `GAMMA`: a round off by more than 1e-9 in any
   token's probability at any position fails (0.002 where the code is driven on a grid: controlled_random).
4. `speculative_generate` is made of your rounds: every token it returns came out of a `speculative_round`
   call after the last token before it (at most one extra call: a prompt pass, if you write one, is a round
   with gamma 0), and it returns exactly `length` tokens.
5. `speculative_generate`'s law, computed exactly the same way, against P's: sequences of 2 tokens with gamma 1
   after two start tokens (a round that rejects its draft emits one token and hands the next round its start: a bug
   there never shows in a single round). A generator that draws from a random source of its own is caught here:
   its law is no longer its rounds'.

Where your code draws in a way the controlled source cannot follow (several values per call), it is sampled
instead, `controlled_random.sampled_draws()` times: enough to see a 0.01 bias with probability 0.99. NumPy only
(the grader runs from a fresh clone); fixed seeds: the grade is repeatable.
"""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np

from controlled_random import driven_law, law_distance, marginals, sampled_problems

TIME_LIMIT_S = 60
P = np.array([[0.60, 0.30, 0.10], [0.20, 0.50, 0.30], [0.30, 0.10, 0.60]])  # p(next | previous)
Q = np.array([[0.10, 0.20, 0.70], [0.50, 0.20, 0.30], [0.40, 0.50, 0.10]])  # q(next | previous), far from P
ZEROS = np.array([[0.50, 0.50, 0.00], [0.00, 0.00, 1.00], [0.25, 0.00, 0.75]])  # a table with impossible steps
START, GAMMA = 0, 2
GENERATED = ((START, 2, 1), (2, 2, 1))  # (start token, tokens per sequence, gamma)


def markov_sequence_distribution(table: np.ndarray, start: int, length: int) -> dict[tuple[int, ...], float]:
    """The exact probability of every sequence of `length` tokens after `start` (specdec.reference.rule's, NumPy only).

    >>> markov_sequence_distribution(np.array([[0.5, 0.5], [1.0, 0.0]]), 0, 2)
    {(0, 0): 0.25, (0, 1): 0.25, (1, 0): 0.5, (1, 1): 0.0}
    """
    distribution = {}
    for sequence in itertools.product(range(table.shape[0]), repeat=length):
        probability, previous = 1.0, start
        for token in sequence:
            probability *= table[previous, token]
            previous = token
        distribution[sequence] = float(probability)
    return distribution


def law_problems(draw, truth: dict, what: str, seed: int) -> list[str]:
    """`draw(rng)`'s law against `truth`: computed exactly, or sampled where the code cannot be driven."""
    law, tolerance = driven_law(draw)
    if law is None:
        return sampled_problems(draw, truth, seed=seed, seconds=TIME_LIMIT_S / 4, what=what)
    gap, kind, where = law_distance(law, truth)
    if gap <= tolerance:
        return []
    if kind == "marginal":
        position, token = where
        yours, exact = marginals(law).get(where, 0.0), marginals(truth).get(where, 0.0)
        return [
            f"{what}: token {token} comes out at position {position + 1} with probability {yours:.10f}, the exact law "
            f"gives it {exact:.10f}, {gap:.1e} apart (computed exactly from your code, every way its draws can fall)"
        ]
    return [
        f"{what}: the tokens {list(where)} come out with probability {law.get(where, 0.0):.10f}, the exact law gives "
        "it "
        f"{truth.get(where, 0.0):.10f}, {gap:.1e} apart (computed exactly from your code, every way its draws can fall)"
    ]


def round_law(target: np.ndarray, draft: np.ndarray, previous: int, gamma: int) -> dict[tuple[int, ...], float]:
    """The exact law of what one round emits after `previous`: drafts x ~ draft, kept with min(1, p/q), so an x is
    drafted and kept with chance min(p(x), q(x)); a rejection emits y with chance max(0, p(y) - q(y)); the bonus y
    after gamma kept drafts with chance p(y).

    >>> law = round_law(np.array([[0.5, 0.5], [0.5, 0.5]]), np.array([[1.0, 0.0], [1.0, 0.0]]), 0, 1)
    >>> float(law[(0, 0)]), float(law[(0, 1)]), float(law[(1,)])
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
    for name, table, start, length in (
        ("P", P, START, 1),
        ("P", P, START, 3),
        ("Q", Q, 2, 2),
        ("a table with zeros", ZEROS, 0, 3),
    ):
        yours = module.sequence_distribution(table, start, length)
        truth = markov_sequence_distribution(table, start, length)
        call = f"sequence_distribution({name}, {start}, {length})"
        if set(yours) != set(truth):
            return [f"{call} has {len(yours)} keys; it needs all {len(truth)} sequences, those of probability zero too"]
        wrong = [key for key in truth if not np.isclose(yours[key], truth[key], atol=1e-12)]
        if wrong:
            return [
                f"{call}: the chance of {wrong[0]} should be {truth[wrong[0]]:.4f}, yours says {yours[wrong[0]]:.4f}"
            ]
    return []


def round_problems(module) -> list[str]:
    rng = np.random.default_rng(11)
    for previous in (0, 1, 2):
        for _ in range(20):
            emitted = list(module.speculative_round(P, P.copy(), previous, GAMMA, rng))
            if len(emitted) != GAMMA + 1:
                kept = len(emitted) - 1
                why = (
                    "it emitted no token: a round always emits one (from the residual, or the bonus token)"
                    if not emitted
                    else f"it kept {kept} of {GAMMA} drafts, or left out the bonus token: with Q = P every draft has "
                    "p/q = 1 "
                    "and must be kept, and a round that keeps them all adds the bonus token"
                    if kept < GAMMA
                    else ""
                )
                return [
                    f"with Q = P every draft is kept, so a round emits gamma + 1 = {GAMMA + 1} tokens; "
                    f"speculative_round(P, P, {previous}, {GAMMA}, rng) emitted {emitted}: {why}".rstrip(": ")
                ]
        emitted = list(module.speculative_round(P, Q, previous, 0, rng))
        if len(emitted) != 1:
            return [
                f"speculative_round(P, Q, {previous}, 0, rng) emitted {emitted}: with gamma = 0 a round is one token "
                "from P"
            ]
    for previous in (0, 1, 2):
        for gamma in range(GAMMA + 1):
            problems = law_problems(
                lambda rng, previous=previous, gamma=gamma: tuple(
                    int(t) for t in module.speculative_round(P, Q, previous, gamma, rng)
                ),
                round_law(P, Q, previous, gamma),
                f"speculative_round(P, Q, {previous}, {gamma}, rng) with Q far from P",
                seed=previous,
            )
            if problems:
                return problems
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
        tokens = [
            int(t) for t in module.speculative_generate(P, P.copy(), START, length, GAMMA, np.random.default_rng(12))
        ]
    finally:
        module.speculative_round = real
    if len(tokens) != length:
        return [
            f"speculative_generate(P, P, {START}, {length}, ...) must return exactly {length} tokens, yours returned "
            f"{len(tokens)}"
        ]
    if not calls:
        return ["speculative_generate never called speculative_round: build the text from rounds"]
    text = [START]
    for previous, gamma, emitted in calls:
        if previous != text[-1]:
            return [
                f"a round was started after token {previous}, but the text so far ends with {text[-1]}: each round "
                "starts "
                "after the last token emitted (not after the start token)"
            ]
        if gamma > GAMMA:
            return [f"a round was asked for {gamma} drafts, more than gamma = {GAMMA}"]
        text += emitted
    if tokens != text[1 : 1 + length]:
        return [
            f"speculative_generate returned {tokens}, but its rounds emitted {text[1:]}: return what the rounds emit, "
            "in order"
        ]
    if len(calls) > -(-length // (GAMMA + 1)) + 1:
        return [
            f"{len(calls)} rounds for {length} tokens with Q = P (every round could emit {GAMMA + 1}): ask each round "
            "for gamma drafts"
        ]
    return []


def grade(module) -> list[str]:
    problems = enumeration_problems(module) or round_problems(module) or generator_problems(module)
    if problems:
        return problems
    for start, length, gamma in GENERATED:
        problems = law_problems(
            lambda rng, start=start, length=length, gamma=gamma: tuple(
                int(t) for t in module.speculative_generate(P, Q, start, length, gamma, rng)
            ),
            markov_sequence_distribution(P, start, length),
            f"speculative_generate(P, Q, {start}, {length}, {gamma}, rng)",
            seed=10 + start,
        )
        if problems:
            return problems
    return []
