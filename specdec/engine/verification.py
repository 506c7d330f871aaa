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

A chain of fixed candidates (prompt lookup's, q = None) is the same rule with q(x_i) = 1: accept x_i
with probability p_i(x_i), else draw from p_i with x_i taken out (max(0, p - q) of a point mass).

A chain is a tree of width one, so the outcome is a tree's `Verdict`: the accepted path is the first
`accepted` nodes (`specdec.engine.tree_verification` walks wider trees and returns the same type).

Not handled here: running models, caches, stopping rules (see `specdec.engine.loop`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specdec.engine.sampling import argmax_rows, sample
from specdec.engine.trees import check_token_ids


@dataclass(frozen=True)
class Verdict:
    """The outcome of checking one proposal (a chain or a tree), node by node."""

    path: tuple[int, ...]  # the accepted nodes, from the root's child down (a chain: 0, 1, ..., accepted - 1)
    next_token: int  # the token the target adds after them
    full_accept: bool  # True: the path ends at a node without children (a bonus token); False: resampled
    tested: tuple[bool | None, ...]  # per node: True accepted, False tested and rejected, None not tested
    uniforms: tuple[float | None, ...]  # per node: the u it was tested with (None when greedy or not tested)
    target_probs: tuple[float, ...]  # per node: p(token) at its parent (greedy: 1.0 if the argmax, else 0.0)
    draft_probs: tuple[float, ...]  # per node: q(token) at its parent (greedy and fixed candidates: 1.0)

    @property
    def accepted(self) -> int:
        return len(self.path)


def chain_verdict(
    accepted: int,
    k: int,
    next_token: int,
    uniforms: tuple[float | None, ...],
    target_probs: tuple[float, ...],
    draft_probs: tuple[float, ...],
) -> Verdict:
    """The `Verdict` of a chain of k whose first `accepted` tokens were kept: token `accepted` was the one rejected.

    >>> chain_verdict(1, 3, 9, (None,) * 3, (1.0, 0.0, 1.0), (1.0,) * 3).tested
    (True, False, None)
    """
    tested = tuple(True if i < accepted else (False if i == accepted else None) for i in range(k))
    return Verdict(tuple(range(accepted)), next_token, accepted == k, tested, uniforms, target_probs, draft_probs)


def verify_sampled(
    p: torch.Tensor, q: torch.Tensor | None, drafted: torch.Tensor, generator: torch.Generator | None
) -> Verdict:
    """Accept or reject each drafted token with probability min(1, p/q); see the module docstring.

    `p` is [k + 1, V], `q` [k, V] (or None: each x_i a fixed candidate, q_i a point mass on it).

    >>> p = torch.tensor([[0.3, 0.4, 0.3], [0.5, 0.5, 0.0]])   # [k+1, V] with k = 1
    >>> q = torch.tensor([[0.0, 1.0, 0.0]])                      # the draft was sure of token 1
    >>> verdict = verify_sampled(p, q, torch.tensor([1]), torch.Generator().manual_seed(0))
    >>> verdict.accepted, verdict.target_probs, verdict.draft_probs
    (0, (0.4000000059604645,), (1.0,))
    """
    check_token_ids(drafted, p.shape[-1])
    k = drafted.shape[0]
    positions = torch.arange(k, device=drafted.device)
    u = torch.rand(k, generator=generator, device=p.device)  # [k]
    p_drafted = p[positions, drafted]  # [k]
    q_drafted = q[positions, drafted] if q is not None else torch.ones_like(p_drafted)  # [k]
    accept = u * q_drafted < p_drafted  # [k], u < p/q without dividing
    rejected = (~accept).nonzero()
    accepted = int(rejected[0, 0]) if rejected.numel() else k
    if accepted < k:
        if q is None:  # a point mass: take x out of p
            residual = p[accepted].clone()
            residual[drafted[accepted]] = 0.0
        else:
            residual = (p[accepted] - q[accepted]).clamp(min=0)  # [V]
        if residual.sum() <= 0:  # p == q up to rounding
            residual = p[accepted]
        next_token = int(sample((residual / residual.sum())[None], generator))
    else:
        next_token = int(sample(p[k][None], generator))  # the bonus token
    u_list = u.tolist()
    return chain_verdict(
        accepted,
        k,
        next_token,
        tuple(u_list[i] if i <= accepted else None for i in range(k)),
        tuple(p_drafted.tolist()),
        tuple(q_drafted.tolist()),
    )


def verify_greedy(target_logits: torch.Tensor, drafted: torch.Tensor) -> Verdict:
    """Greedy verification: accept the longest prefix of `drafted` that matches the target's argmax.

    `target_logits` is [k+1, V]. The next token is the target's argmax at the first mismatch
    (or after the last drafted token when all match).

    >>> logits = torch.tensor([[0.0, 5.0], [5.0, 0.0], [0.0, 5.0]])   # argmax 1, 0, 1
    >>> verify_greedy(logits, torch.tensor([1, 1])).accepted, verify_greedy(logits, torch.tensor([1, 1])).next_token
    (1, 0)
    """
    check_token_ids(drafted, target_logits.shape[-1])
    k = drafted.shape[0]
    choices = argmax_rows(target_logits)  # [k+1]
    matches = (choices[:k] == drafted).tolist() + [False]
    accepted = matches.index(False)
    return chain_verdict(
        accepted, k, choices.tolist()[accepted], (None,) * k, tuple(float(m) for m in matches[:k]), (1.0,) * k
    )
