"""The accept/reject rule of speculative sampling, in plain NumPy: the trusted reference.

Notation: p is the target distribution, q the draft distribution, gamma the number of drafted
tokens per round (Leviathan et al. 2023, Algorithm 1; Chen et al. 2023, Algorithm 2).

The rule for one drafted token x ~ q:

    accept x with probability min(1, p(x) / q(x));
    on rejection, sample a replacement from the residual norm(max(0, p - q)).

Why the output is exactly p: x is emitted through acceptance with probability
q(x) * min(1, p(x)/q(x)) = min(p(x), q(x)); a rejection happens with probability
1 - sum(min(p, q)) = 1 - alpha, and then x is emitted with probability
(p(x) - min(p(x), q(x))) / (1 - alpha). The sum is p(x).

This module shows that for one position (`speculative_rule`, `sample_one_position`) and for
whole blocks of gamma tokens over a toy Markov "language" (`speculative_markov_generate`), where
the next-token tables P and Q play the roles of target and draft models. The torch engine in
`specdec.engine.verification` implements the same rule on real model outputs; the tests hold the two
against each other and against exact enumeration (`markov_sequence_distribution`).

Deliberately broken rules, the negative controls the statistical tests must catch, live with
the other classic bugs in `specdec.bugs.rules` (`accept_always_rule`, `resample_from_target_rule`).

Not handled here: temperature, top-k and top-p (see `specdec.engine.sampling`), models, caches.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np

from specdec.reference.theory import residual_distribution

# A rule decides one drafted token: (p_row, q_row, drafted, u, rng) -> (emitted token, accepted?).
Rule = Callable[[np.ndarray, np.ndarray, int, float, np.random.Generator], tuple[int, bool]]


def sample_from(distribution: np.ndarray, rng: np.random.Generator) -> int:
    """Draw one index from `distribution` by inverting its cumulative sum.

    >>> sample_from(np.array([0.0, 1.0, 0.0]), np.random.default_rng(0))
    1
    """
    cumulative = np.cumsum(distribution)
    return int(min(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"), len(distribution) - 1))


def speculative_rule(
    p: np.ndarray, q: np.ndarray, drafted: int, u: float, rng: np.random.Generator
) -> tuple[int, bool]:
    """The correct rule: accept with probability min(1, p/q), else resample from the residual.

    `u` is the uniform draw in [0, 1). Writing the test as u * q(x) < p(x) avoids a division and
    is exactly u < p(x)/q(x) because q(x) > 0 for any token the draft could propose.

    >>> rng = np.random.default_rng(0)
    >>> speculative_rule(np.array([0.3, 0.4, 0.3]), np.array([0.6, 0.2, 0.2]), 1, 0.99, rng)
    (1, True)
    """
    if u * q[drafted] < p[drafted]:
        return drafted, True
    return sample_from(residual_distribution(p, q), rng), False


def multi_candidate_rule(
    p: np.ndarray, q: np.ndarray, candidates: int, rng: np.random.Generator
) -> tuple[int, int | None]:
    """One node of a token tree: up to `candidates` guesses drawn from q without replacement, tested in turn.

    Recursive rejection sampling (SpecInfer; Jeon et al. 2024): test each guess x against what is
    left of p, r, with chance min(1, r(x) / s(x)), s being the law the guess was drawn from; after a
    rejection r <- norm(max(0, r - s)) and s <- s without x, renormalised; if every guess fails,
    emit a sample of r. Each test is the chain's rule with target r and draft s, which emits exactly
    r, so by induction the emitted token has law p. Returns (token, index of the accepted guess or None).

    >>> multi_candidate_rule(np.array([0.0, 1.0]), np.array([0.5, 0.5]), 2, np.random.default_rng(0))[0]
    1
    """
    r, s = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    for index in range(candidates):
        if s.sum() <= 0:
            break
        x = sample_from(s, rng)
        if rng.random() * s[x] < r[x]:
            return x, index
        r = residual_distribution(r, s)
        s = s.copy()
        s[x] = 0.0
        s = s / s.sum() if s.sum() > 0 else s
    return sample_from(r, rng), None


def sample_one_position(
    p: np.ndarray, q: np.ndarray, trials: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Run the rule `trials` times at one position, vectorised. Returns (tokens, accepted).

    Each trial drafts x ~ q, draws u ~ U[0, 1), accepts when u * q(x) < p(x), and otherwise
    replaces x with a sample from the residual. `tokens` has shape [trials], `accepted` is a
    boolean array of the same shape.

    >>> tokens, accepted = sample_one_position(np.array([0.3, 0.4, 0.3]), np.array([0.6, 0.2, 0.2]),
    ...                                        100_000, np.random.default_rng(0))
    >>> bool(abs(accepted.mean() - 0.7) < 0.01)
    True
    """
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    drafted = rng.choice(len(q), size=trials, p=q)  # [trials]
    u = rng.random(trials)  # [trials]
    accepted = u * q[drafted] < p[drafted]  # [trials]
    replacements = rng.choice(len(p), size=trials, p=residual_distribution(p, q))  # [trials]
    return np.where(accepted, drafted, replacements), accepted


def speculative_markov_generate(
    target_table: np.ndarray,
    draft_table: np.ndarray,
    start: int,
    length: int,
    gamma: int,
    rng: np.random.Generator,
    rule: Rule = speculative_rule,
) -> tuple[list[int], int, int]:
    """Generate `length` tokens of a first-order Markov language by speculative decoding.

    `target_table[a]` is p(next | previous token a) and `draft_table[a]` is q(next | a), both of
    shape [V, V]. Each round drafts gamma tokens from Q, checks them left to right with `rule`,
    stops at the first rejection (its replacement is the round's last token), and after a full
    accept adds a bonus token from P. Returns (tokens, drafted count, accepted count).

    With the correct rule the tokens follow P exactly, block after block: the sequence
    distribution equals `markov_sequence_distribution(target_table, start, length)`.
    """
    tokens: list[int] = []
    drafted_total = accepted_total = 0
    previous = start
    while len(tokens) < length:
        round_gamma = min(gamma, length - len(tokens) - 1)  # never produce more than asked
        drafted, state = [], previous
        for _ in range(round_gamma):  # the draft proposes gamma tokens
            state = sample_from(draft_table[state], rng)
            drafted.append(state)
        context = previous
        for token in drafted:  # the target checks them in order
            emitted, accepted = rule(target_table[context], draft_table[context], token, rng.random(), rng)
            drafted_total += 1
            accepted_total += int(accepted)
            tokens.append(emitted)
            context = emitted
            if not accepted:
                break
        else:  # all accepted: the bonus token
            tokens.append(sample_from(target_table[context], rng))
        previous = tokens[-1]
    return tokens[:length], drafted_total, accepted_total


def markov_sequence_distribution(table: np.ndarray, start: int, length: int) -> dict[tuple[int, ...], float]:
    """The exact probability of every sequence of `length` tokens, by enumeration.

    >>> table = np.array([[0.5, 0.5], [1.0, 0.0]])
    >>> markov_sequence_distribution(table, 0, 2)
    {(0, 0): 0.25, (0, 1): 0.25, (1, 0): 0.5, (1, 1): 0.0}
    """
    vocabulary = range(table.shape[0])
    distribution = {}
    for sequence in itertools.product(vocabulary, repeat=length):
        probability, previous = 1.0, start
        for token in sequence:
            probability *= table[previous, token]
            previous = token
        distribution[sequence] = float(probability)
    return distribution
