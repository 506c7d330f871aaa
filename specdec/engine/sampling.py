"""From logits to the distributions p and q: temperature, top-k and top-p, as transformers does it.

Speculative sampling is exact for whatever distributions it is given, so the target's p must be
the distribution a user asked for (say temperature 0.7, top-p 0.9), and the q in the accept test
must be the distribution the draft really sampled from. We warp both the same way, so the draft
proposes what the warped target is likely to want. Warping p but not q keeps the output exact
(as long as the test uses the q that was sampled) but changes alpha, usually for the worse; warping
q but testing against an unwarped p gives output that is not what the user asked for.

The order and the edge cases follow transformers' `generate` (`TemperatureLogitsWarper`, then
`TopKLogitsWarper`, then `TopPLogitsWarper`): top-k keeps ties with the k-th logit, top-p always
keeps the most likely token. A test holds this module against those warpers.

temperature = 0 means greedy decoding: the distribution is a point mass on the argmax (the first
one on ties, as `torch.argmax` and `generate` pick).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from specdec.errors import SpecdecError


@dataclass(frozen=True)
class SamplingConfig:
    """How to turn logits into a next-token distribution. temperature 0 is greedy."""

    temperature: float = 1.0
    top_k: int = 0  # 0 keeps every token
    top_p: float = 1.0  # 1.0 keeps every token

    def __post_init__(self) -> None:
        if not self.temperature >= 0:
            raise SpecdecError(f"temperature must be >= 0 (0 means greedy), got {self.temperature}")
        if int(self.top_k) != self.top_k or self.top_k < 0:
            raise SpecdecError(f"top_k must be a whole number >= 0 (0 turns it off), got {self.top_k}")
        if not 0.0 < self.top_p <= 1.0:
            raise SpecdecError(f"top_p must be in (0, 1] (1 turns it off), got {self.top_p}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


def warp_logits(logits: torch.Tensor, config: SamplingConfig) -> torch.Tensor:
    """Apply temperature, then top-k, then top-p to logits of shape [n, V]; removed tokens get -inf.

    >>> logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    >>> warp_logits(logits, SamplingConfig(temperature=0.5, top_k=2))
    tensor([[4., 2., -inf, -inf]])
    """
    scores = logits.float() / config.temperature  # [n, V]
    if config.top_k > 0:
        k = min(config.top_k, scores.shape[-1])
        kth_best = torch.topk(scores, k, dim=-1).values[..., -1:]  # [n, 1]
        scores = scores.masked_fill(scores < kth_best, float("-inf"))
    if config.top_p < 1.0:
        sorted_scores, sorted_indices = torch.sort(scores, dim=-1, descending=False)  # [n, V]
        cumulative = sorted_scores.softmax(dim=-1).cumsum(dim=-1)  # [n, V]
        sorted_remove = cumulative <= (1.0 - config.top_p)
        sorted_remove[..., -1:] = False  # keep the best token
        remove = sorted_remove.scatter(-1, sorted_indices, sorted_remove)
        scores = scores.masked_fill(remove, float("-inf"))
    return scores


def argmax_rows(logits: torch.Tensor) -> torch.Tensor:
    """The argmax of each row of `logits` [..., V] as long [...]: the first one on ties, as `torch.argmax` picks.

    Greedy decoding takes one per generated token, over a vocabulary of 150k on Qwen2.5. On a CPU this runs it in
    NumPy, whose argmax over 151,936 float32 logits took 7 microseconds against torch's 81 (AMD EPYC, AVX-512, torch
    2.13, 2 threads; `timeit`), about 0.3% of a 1.5B model's step on llama.cpp; elsewhere (a GPU, bfloat16) in torch.

    >>> argmax_rows(torch.tensor([[0.0, 3.0, 3.0], [2.0, 1.0, 0.0]])).tolist()
    [1, 0]
    """
    if logits.device.type == "cpu" and logits.dtype == torch.float32 and not logits.requires_grad:
        return torch.from_numpy(np.asarray(logits.numpy().argmax(axis=-1)))  # [...]; a 0-d array for one row [V]
    return logits.argmax(dim=-1)


def probabilities(logits: torch.Tensor, config: SamplingConfig) -> torch.Tensor:
    """The next-token distributions for logits of shape [n, V], as float32 of shape [n, V].

    Greedy (temperature 0) gives a one-hot row on the argmax.

    >>> probabilities(torch.tensor([[0.0, 3.0, 1.0]]), SamplingConfig(temperature=0))
    tensor([[0., 1., 0.]])
    """
    if config.greedy:
        one_hot = torch.zeros_like(logits, dtype=torch.float32)  # [n, V]
        return one_hot.scatter_(-1, argmax_rows(logits)[..., None], 1.0)
    return warp_logits(logits, config).softmax(dim=-1)  # [n, V]


def sample(distribution: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """Draw one token per row of `distribution` [n, V] (non-negative weights); returns shape [n] (long).

    On a CPU, by inverting the cumulative distribution: one uniform u per row, and the first token whose cumulative
    weight exceeds u times the row's total (elsewhere `torch.multinomial`, as before: MPS has no float64). The sums are
    in float64, so each token's share of [0, total) is its weight to about 1e-16. `torch.multinomial` draws the same
    law, but took 2.4 ms a row over Qwen2.5's 151,936 tokens (`timeit`, AMD EPYC, AVX-512, torch 2.13), a tenth of a
    1.5B model's step on llama.cpp: sampled plain decoding ran at 37.8 tokens/s this way against 34.0 (medians of 8
    interleaved runs of 128 tokens).

    >>> sample(torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 2.0]]), None).tolist()
    [1, 2]
    """
    if distribution.device.type == "cpu":
        cumulative = distribution.double().cumsum(dim=-1)  # [n, V]
        u = torch.rand(cumulative.shape[0], 1, generator=generator, dtype=torch.float64, device=cumulative.device)
        tokens = torch.searchsorted(cumulative, u * cumulative[:, -1:], right=True).squeeze(-1)  # [n]
        if not bool((tokens >= distribution.shape[-1]).any()):  # else u * total rounded up to the total: drawn again
            return tokens
    return torch.multinomial(distribution, num_samples=1, generator=generator).squeeze(-1)


def choose_next(
    logits: torch.Tensor, config: SamplingConfig, generator: torch.Generator | None
) -> tuple[int, torch.Tensor | None]:
    """Pick the next token from logits [V]: the argmax when greedy, else a sample.

    Returns the token and, when sampling, the distribution it was drawn from ([V], for q).
    """
    if config.greedy:
        return int(argmax_rows(logits)), None
    distribution = probabilities(logits[None], config)[0]  # [V]
    return int(sample(distribution[None], generator)), distribution


def fit_vocabulary(logits: torch.Tensor, size: int) -> torch.Tensor:
    """The draft's logits [n, V_draft] made [n, size] wide, size being the target's vocabulary.

    Draft and target may share a tokenizer but differ in embedding rows (Qwen2.5: 151936 vs
    152064). A narrower draft gets -inf (probability 0) for the ids it lacks; a wider draft loses
    the ids the target could never emit. Only q changes, and the accept/reject rule is exact for
    any q, so the target's p stays exactly its own distribution.

    >>> fit_vocabulary(torch.zeros(1, 2), 3).tolist(), fit_vocabulary(torch.zeros(1, 4), 3).shape
    ([[0.0, 0.0, -inf]], torch.Size([1, 3]))
    """
    missing = size - logits.shape[-1]
    if missing < 0:
        return logits[..., :size]
    if missing == 0:
        return logits
    return torch.nn.functional.pad(logits, (0, missing), value=float("-inf"))
