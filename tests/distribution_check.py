"""Exact target distributions by enumeration, and the sampled ones to hold against them.

Used by the statistical tests: generate many seeded runs, count the tokens of the first
speculative round, and compare with what the target alone would give, computed exactly by running
the target on every possible continuation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import torch

from specdec import speculative_generate
from specdec.reference.stats import chi_square_test
from specdec.engine.sampling import SamplingConfig, probabilities

RUNS = 3000
FAST_RUNS = 1500   # the drafters without a draft model: half the runs (their tests are many); the broken rules still fail
SIGNIFICANCE = 1e-3
PROMPT = [2, 3, 4]
LENGTH = 4   # tokens per run: the prompt pass gives token 1, one round of gamma = 2 gives tokens 2..4

# the decodings every distribution test runs at: plain sampling, a temperature, top-k and top-p
SAMPLINGS = [SamplingConfig(temperature=1.0), SamplingConfig(temperature=0.7), SamplingConfig(temperature=1.0, top_k=3),
             SamplingConfig(temperature=1.0, top_p=0.8)]
SAMPLING_IDS = ["t1.0", "t0.7", "top_k3", "top_p0.8"]


@torch.inference_mode()
def exact_distribution(model: torch.nn.Module, prompt: list[int], length: int, sampling: SamplingConfig,
                       skip_first: bool = True) -> dict[tuple[int, ...], float]:
    """P(t_1..t_length | prompt) under the warped target, by enumerating every continuation.

    With `skip_first`, the first token is summed out: the result is the distribution of
    (t_2..t_length), the tokens the first speculative round produces.
    """
    vocab = model.get_output_embeddings().out_features
    joint = {(): 1.0}
    for _ in range(length):
        prefixes = list(joint)
        batch = torch.tensor([prompt + list(prefix) for prefix in prefixes])      # [B, T + i]
        logits = model(input_ids=batch).logits[:, -1]                            # [B, V]
        next_probs = probabilities(logits, sampling).tolist()                    # [B, V]
        joint = {prefix + (token,): joint[prefix] * next_probs[b][token]
                 for b, prefix in enumerate(prefixes) for token in range(vocab) if next_probs[b][token] > 0}
    if not skip_first:
        return joint
    marginal: dict[tuple[int, ...], float] = Counter()
    for sequence, probability in joint.items():
        marginal[sequence[1:]] += probability
    return dict(marginal)


def sampled_counts(generate: Callable[[int], list[int]], runs: int, length: int, skip_first: bool = True) -> Counter:
    """Counts of (t_2..t_length) (or t_1..t_length) over `runs` seeded generations."""
    start = 1 if skip_first else 0
    return Counter(tuple(generate(seed)[start:length]) for seed in range(runs))


def speculative_fit(target, draft_factory, sampling: SamplingConfig, prompt=PROMPT, gamma_factory=lambda: 3, lengths=None, runs=RUNS):
    exact = exact_distribution(target, prompt, LENGTH, sampling)
    drafted = accepted = 0

    def generate(seed):
        nonlocal drafted, accepted
        result = speculative_generate(target, draft_factory(), torch.tensor(prompt), gamma=gamma_factory(), max_new_tokens=LENGTH,
                                      temperature=sampling.temperature, top_k=sampling.top_k, top_p=sampling.top_p,
                                      seed=seed)
        drafted, accepted = drafted + result.stats.drafted, accepted + result.stats.accepted
        if lengths is not None:
            lengths.append(len(result.rounds[1].drafted))
        return result.tokens

    fit = chi_square_test(sampled_counts(generate, runs, LENGTH), exact)
    return fit, accepted / drafted
