"""A token tree's children (`specdec.drafting.tree_drafter`, step 3 of growing it): the q they are drawn from, the draw,
and the q rows the acceptance rule reads.

Notation: q is the draft's distribution, p the target's. At each frontier node q is warped like p when sampling (greedy:
the plain softmax, whose values are the nodes' confidences). A node's children are its most likely tokens when greedy;
sampling, they are drawn from q without replacement, which is what the acceptance rule needs
(`specdec.engine.tree_verification`), and the tree carries the q each node's children were drawn from (`q_table`).
"""

from __future__ import annotations

import torch

from specdec.engine.sampling import SamplingConfig, probabilities, sample


def frontier_distributions(logits: torch.Tensor, sampling: SamplingConfig) -> torch.Tensor:
    """q at each frontier node, [F, V]: warped like p when sampling; greedy, the plain softmax (for confidences)."""
    if sampling.greedy:
        return torch.softmax(logits.float(), dim=-1)
    return probabilities(logits, sampling)


def draw_children(
    q: torch.Tensor, count: int, sampling: SamplingConfig, generator: torch.Generator | None
) -> list[int]:
    """`count` distinct children from q [V]: the most likely when greedy, else draws without replacement."""
    if count == 0:
        return []
    if sampling.greedy:
        return q.topk(count).indices.tolist()
    drawn, remaining = [], q.clone()
    for _ in range(count):
        token = int(sample(remaining[None], generator))
        drawn.append(token)
        remaining[token] = 0.0
    return drawn


def q_table(q_rows: dict[int, torch.Tensor], nodes: int, vocab_size: int, device: torch.device) -> torch.Tensor:
    """The q each node's children were drawn from, [N + 1, V] for `nodes` = N: row 0 the root's, row n + 1 node n's
    (zeros where a node drew none)."""
    table = torch.zeros(nodes + 1, vocab_size, device=device)  # [N + 1, V]
    for node, q_row in q_rows.items():
        table[node + 1] = q_row
    return table
