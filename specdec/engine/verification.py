"""Checking a drafted block against the target: the modified rejection sampling step, in torch.

Notation: p is the target, q the draft, gamma the drafted tokens of this round (k of them here,
k <= gamma near the end of generation). After one target pass over the last accepted token and
the k drafted tokens we hold

    p: [k+1, V]   the target's distribution before each drafted token and after the last one
    q: [k, V]     the draft's distribution each drafted token was sampled from
    drafted: [k]  the drafted tokens x_1..x_k

and decide, left to right (Leviathan et al. 2023, Algorithm 1):

    accept x_i while u_i < p_i(x_i) / q_i(x_i), u_i ~ U[0, 1)
    at the first rejection i: emit y ~ norm(max(0, p_i - q_i))  (a "resampled" token)
    if all k are accepted:    emit y ~ p_{k+1}                 (a "bonus" token)

so every round emits between 1 and k + 1 tokens, distributed exactly as the target would have
produced them one at a time. `specdec.reference.rule.speculative_rule` is the same rule in NumPy.

Greedy decoding is the temperature-0 limit: p and q are point masses, so a drafted token is
accepted exactly when it is the target's argmax, and the replacement is the target's argmax.
`verify_greedy` does that with argmax comparisons, without building one-hot tensors.

Not handled here: running models, caches, stopping rules (see `specdec.generation.speculative`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specdec.engine.sampling import sample


@dataclass(frozen=True)
class Verdict:
    """The outcome of checking one drafted block."""

    accepted: int                       # how many drafted tokens were accepted (0..k)
    next_token: int                     # the token the target adds after them
    full_accept: bool                   # True: next_token is a bonus token; False: a resampled one
    uniforms: tuple[float | None, ...]  # u_i for each drafted token; None where not tested
    target_probs: tuple[float, ...]     # p_i(x_i) for each drafted token
    draft_probs: tuple[float, ...]      # q_i(x_i) for each drafted token


def verify_sampled(p: torch.Tensor, q: torch.Tensor, drafted: torch.Tensor, generator: torch.Generator | None) -> Verdict:
    """Accept or reject each drafted token with probability min(1, p/q); see the module docstring.

    >>> p = torch.tensor([[0.3, 0.4, 0.3], [0.5, 0.5, 0.0]])   # [k+1, V] with k = 1
    >>> q = torch.tensor([[0.0, 1.0, 0.0]])                      # the draft was sure of token 1
    >>> verdict = verify_sampled(p, q, torch.tensor([1]), torch.Generator().manual_seed(0))
    >>> verdict.accepted, verdict.target_probs, verdict.draft_probs
    (0, (0.4000000059604645,), (1.0,))
    """
    k = drafted.shape[0]
    positions = torch.arange(k, device=drafted.device)
    u = torch.rand(k, generator=generator, device=p.device)            # [k]
    p_drafted = p[positions, drafted]                                  # [k]
    q_drafted = q[positions, drafted]                                  # [k]
    accept = u * q_drafted < p_drafted                                 # [k], u < p/q without dividing
    rejected = (~accept).nonzero()
    accepted = int(rejected[0, 0]) if rejected.numel() else k
    if accepted < k:
        residual = (p[accepted] - q[accepted]).clamp(min=0)            # [V]
        if residual.sum() <= 0:                                        # p == q up to rounding
            residual = p[accepted]
        next_token = int(sample((residual / residual.sum())[None], generator))
    else:
        next_token = int(sample(p[k][None], generator))                # the bonus token
    u_list = u.tolist()
    return Verdict(
        accepted=accepted,
        next_token=next_token,
        full_accept=accepted == k,
        uniforms=tuple(u_list[i] if i <= accepted else None for i in range(k)),
        target_probs=tuple(p_drafted.tolist()),
        draft_probs=tuple(q_drafted.tolist()),
    )


def verify_greedy(target_logits: torch.Tensor, drafted: torch.Tensor) -> Verdict:
    """Greedy verification: accept the longest prefix of `drafted` that matches the target's argmax.

    `target_logits` is [k+1, V]. The next token is the target's argmax at the first mismatch
    (or after the last drafted token when all match).

    >>> logits = torch.tensor([[0.0, 5.0], [5.0, 0.0], [0.0, 5.0]])   # argmax 1, 0, 1
    >>> verify_greedy(logits, torch.tensor([1, 1])).accepted, verify_greedy(logits, torch.tensor([1, 1])).next_token
    (1, 0)
    """
    k = drafted.shape[0]
    choices = target_logits.argmax(dim=-1)                             # [k+1]
    matches = (choices[:k] == drafted).tolist() + [False]
    accepted = matches.index(False)
    target_choices = choices.tolist()
    return Verdict(
        accepted=accepted,
        next_token=target_choices[accepted],
        full_accept=accepted == k,
        uniforms=(None,) * k,
        target_probs=tuple(float(m) for m in matches[:k]),
        draft_probs=(1.0,) * k,
    )
