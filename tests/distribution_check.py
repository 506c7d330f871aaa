"""Exact target distributions by enumeration, and the sampled ones to hold against them.

Used by the statistical tests: generate many independent runs, count the tokens of the first
speculative round, and compare with what the target alone would give, computed exactly by running
the target on every possible continuation.

The runs are the rows of ONE batched call (`speculative_generate` with the same prompt `runs` times):
every row draws from its own random stream (`SeedSequence([seed, row])`) and is exact on its own, so the
rows are independent draws, and a batch of 3,000 rows costs seconds where 3,000 calls cost a minute.

How many runs? Enough that every negative control fails. A broken rule moves the distribution by
D = sum over cells of (p_broken - p)^2 / p; over N runs Pearson's statistic then has mean df + N D (a
noncentral chi-square). `power(runs, D, df)` is the chance it exceeds the p = 1e-3 threshold, taking D a
third smaller than measured for safety, and `EFFECTS` holds each control's D, measured once as
(statistic - df) / runs; `tests/test_power.py` checks that every control's runs give a power of 0.999.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable

import torch

from specdec import speculative_generate
from specdec.engine.sampling import SamplingConfig, probabilities
from specdec.reference.stats import chi_square_survival, chi_square_test

RUNS = 3000
LLAMA_RUNS = 1000  # the llama.cpp runtime's distribution tests: rows of batched calls on a tiny quantized GGUF
SIGNIFICANCE = 1e-3
PROMPT = [2, 3, 4]
LENGTH = 4  # tokens per run: the prompt pass gives token 1, one round of gamma = 2 gives tokens 2..4

# the decodings every distribution test runs at: plain sampling, a temperature, top-k and top-p
SAMPLINGS = [
    SamplingConfig(temperature=1.0),
    SamplingConfig(temperature=0.7),
    SamplingConfig(temperature=1.0, top_k=3),
    SamplingConfig(temperature=1.0, top_p=0.8),
]
SAMPLING_IDS = ["t1.0", "t0.7", "top_k3", "top_p0.8"]


@torch.inference_mode()
def exact_distribution(
    model: torch.nn.Module, prompt: list[int], length: int, sampling: SamplingConfig, skip_first: bool = True
) -> dict[tuple[int, ...], float]:
    """P(t_1..t_length | prompt) under the warped target, by enumerating every continuation.

    With `skip_first`, the first token is summed out: the result is the distribution of
    (t_2..t_length), the tokens the first speculative round produces.
    """
    vocab = model.get_output_embeddings().out_features
    joint = {(): 1.0}
    for _ in range(length):
        prefixes = list(joint)
        batch = torch.tensor([prompt + list(prefix) for prefix in prefixes], device=model.device)  # [B, T + i]
        logits = model(input_ids=batch).logits[:, -1]  # [B, V]
        next_probs = probabilities(logits, sampling).tolist()  # [B, V]
        joint = {
            prefix + (token,): joint[prefix] * next_probs[b][token]
            for b, prefix in enumerate(prefixes)
            for token in range(vocab)
            if next_probs[b][token] > 0
        }
    if not skip_first:
        return joint
    marginal: dict[tuple[int, ...], float] = Counter()
    for sequence, probability in joint.items():
        marginal[sequence[1:]] += probability
    return dict(marginal)


def sampled_counts(generate: Callable[[int], list[int]], runs: int, length: int, skip_first: bool = True) -> Counter:
    """Counts of (t_2..t_length) (or t_1..t_length) over `runs`
    seeded generations, one call each (for what cannot batch)."""
    start = 1 if skip_first else 0
    return Counter(tuple(generate(seed)[start:length]) for seed in range(runs))


def batched_runs(
    target, draft, sampling: SamplingConfig, prompt=PROMPT, gamma=3, runs=RUNS, length=LENGTH, seed=0
) -> list:
    """`runs` independent generations of `length` tokens after `prompt`, as the rows of one batched call; `gamma` is a
    whole number, None (the planner's choice) or a schedule object (ConfidenceStop, AdaptiveGamma)."""
    length_of_round = {"gamma": gamma} if gamma is None or isinstance(gamma, int) else {"schedule": gamma}
    return speculative_generate(
        target,
        draft,
        [torch.tensor(prompt)] * runs,
        **length_of_round,
        max_new_tokens=length,
        temperature=sampling.temperature,
        top_k=sampling.top_k,
        top_p=sampling.top_p,
        seed=seed,
    )


def speculative_fit(
    target, draft_factory, sampling: SamplingConfig, prompt=PROMPT, gamma_factory=lambda: 3, lengths=None, runs=RUNS
):
    """The chi-square fit of the first round's tokens over `runs`
    rows against the exact distribution, and the acceptance rate."""
    exact = exact_distribution(target, prompt, LENGTH, sampling)
    results = batched_runs(target, draft_factory(), sampling, prompt, gamma_factory(), runs)
    if lengths is not None:
        lengths += [len(result.rounds[1].drafted) for result in results]
    drafted, accepted = sum(r.stats.drafted for r in results), sum(r.stats.accepted for r in results)
    fit = chi_square_test(Counter(tuple(result.tokens[1:LENGTH]) for result in results), exact)
    return fit, accepted / drafted


def critical_value(df: int, significance: float = SIGNIFICANCE) -> float:
    """The statistic above which Pearson's test rejects at `significance` (`chi_square_survival` inverted by bisection).

    >>> round(critical_value(1, 0.05), 2)
    3.84
    """
    low, high = 0.0, 100.0 + 50.0 * df
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (middle, high) if chi_square_survival(middle, df) > significance else (low, middle)
    return high


def power(runs: int, effect: float, df: int, shrink: float = 2 / 3) -> float:
    """The chance that a broken rule of effect D = `effect` fails the test over `runs` runs with `df` degrees of
    freedom.

    The statistic is about normal with mean df + L and variance 2 (df + 2 L), L = runs x D x `shrink` (the
    measured D, a third smaller for safety).

    >>> power(3000, 0.078, 42) > 0.999, power(300, 0.078, 42) > 0.999
    (True, False)
    """
    load = runs * effect * shrink
    mean, spread = df + load, math.sqrt(2 * (df + 2 * load))
    return 0.5 * math.erfc((critical_value(df) - mean) / spread / math.sqrt(2))


# Each negative control's effect on its test, measured once at the runs in brackets: (D, df). D = (statistic - df) /
# runs.
EFFECTS = {
    "accept always, a draft model (3,000)": (3.70, 42),
    "skip the residual, a draft model (3,000)": (0.078, 42),
    "skip the residual, a draft with another tokenizer (3,000)": (0.0186, 38),
    "accept always, a draft with another tokenizer (3,000)": (9.78, 38),
    "skip the residual, layer skipping (3,000)": (0.081, 55),
    "skip the residual, a quantized target (3,000)": (0.123, 24),
    "no correction between sibling guesses, a tree (3,000)": (0.148, 42),
    "only the most probable child, a tree (3,000)": (0.064, 42),
    "fixed candidates against the wrong row, Token Recycling (1,500)": (14.2, 32),
    "a rejected candidate left in the draw, lookahead (1,500)": (0.081, 32),
    "a rejected candidate left in the draw, suffix decoding (1,500)": (0.102, 32),
    "a rejected candidate left in the draw, a drafter in a test file (1,500)": (0.338, 32),
    "one count for a batch's cache, the weakest of 3 rows (1,500 each)": (0.069, 42),
    "skip the residual, a draft model on the llama.cpp runtime (1,500)": (0.28, 38),
}
