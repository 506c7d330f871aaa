"""Checking a drafted token tree against the target: walk down the tree, keeping the output exactly p.

After one target pass over [root, node 0..N-1] (`specdec.engine.trees`) we hold

    p: [N + 1, V]   the target's distribution after the root (row 0) and after each node (row i + 1)
    q: [N + 1, V]   the draft's distribution each node's children were drawn from (same rows)

Greedy: start at the root; while one of the node's children is the target's argmax, accept it
and move there; then emit the argmax (a bonus token at a leaf, a replacement otherwise). That is
the longest path that matches the target's greedy choice at every step.

Sampling, recursive rejection sampling (SpecInfer's multi-step speculative sampling, with the
children drawn without replacement as in Jeon et al. 2024, "Recursive Speculative Decoding"):
at a node with children c_1..c_m, drawn in that order from q without replacement,

    r = p_node, s = q_node
    for c_i in order:
        accept c_i if u_i < r(c_i) / s(c_i), u_i ~ U[0, 1), and move down to c_i
        else  r <- norm(max(0, r - s))           (what is left of p once this test failed)
              s <- norm(s with c_i removed)      (the law of the next child, drawn without replacement)
    no child accepted: emit y ~ r                (a "resampled" token)
    at a node without children: emit y ~ p_node  (a "bonus" token)

Why it is exact (proof sketch). One test of c ~ s against r is the chain rule of
`specdec.engine.verification`: P(accept and emit x) = min(r(x), s(x)), and after a rejection the
remaining mass is exactly max(0, r - s), so "emit c_i if accepted, else a sample of
norm(max(0, r - s))" has law r. Instead of sampling that residual we run the same test again,
with target r' = norm(max(0, r - s)) and the next child, whose law given the children before it is
s' (drawing without replacement): again a draw of r'. By induction over the m children, the token
emitted at a node has law p_node. The tree's shape may depend on anything the draft knew before it
drew a node's children (never on the children themselves), and the uniforms are fresh, so given
the accepted path the next node's children are still an honest draw from its q: by induction over
depth, the whole output has law p. A chain is the tree with one child per node, and the rule is
then exactly the chain's.

Fixed candidates (a tree with `q=None`: Token Recycling, lookahead, suffix decoding) are point masses:
the law of child c_i, given the children before it, is all its mass on c_i. The same walk then reads

    accept c_i if u_i < r(c_i)                   (r(c_i) / 1)
    else  r <- norm(r with c_i removed)          (max(0, r - point mass on c_i))

and a rejected candidate can never come out of the residual. Any rule for choosing the candidates is
exact, even one that looks at p: a point mass on x gives P(y) = p(x) [y = x] + (1 - p(x)) p(y) / (1 - p(x))
[y != x] = p(y) whatever x is.
"""

from __future__ import annotations

import torch

from specdec.engine.sampling import argmax_rows, sample
from specdec.engine.trees import ROOT, DraftTree, check_token_ids
from specdec.engine.verification import Verdict


def verify_tree_greedy(target_logits: torch.Tensor, tree: DraftTree) -> Verdict:
    """Follow the children that are the target's argmax; `target_logits` is [N + 1, V].

    >>> tree = DraftTree(torch.tensor([1, 0, 1]), (-1, -1, 1), None)       # root -> {1, 0}, 0 -> {1}
    >>> logits = torch.tensor([[0.0, 5.0], [5.0, 0.0], [0.0, 5.0], [0.0, 5.0]])  # argmax 1, 0, 1, 1
    >>> verdict = verify_tree_greedy(logits, tree)
    >>> verdict.path, verdict.next_token, verdict.tested     # node 1 was compared and lost; node 2 never reached
    ((0,), 0, (True, False, None))
    """
    check_token_ids(tree.tokens, target_logits.shape[-1])
    choices = argmax_rows(target_logits).tolist()  # [N + 1]: the argmax after each row
    tokens = tree.tokens.tolist()
    tested: list[bool | None] = [None] * tree.size
    path: list[int] = []
    node = ROOT
    while True:
        choice = choices[node + 1]
        children = tree.children(node)
        match = next((child for child in children if tokens[child] == choice), None)
        for child in children:
            tested[child] = child == match
        if match is None:
            break
        path.append(match)
        node = match
    return Verdict(
        path=tuple(path),
        next_token=choices[node + 1],
        full_accept=not tree.children(node),
        tested=tuple(tested),
        uniforms=(None,) * tree.size,
        target_probs=tuple(float(tokens[i] == choices[parent + 1]) for i, parent in enumerate(tree.parents)),
        draft_probs=(1.0,) * tree.size,
    )


def verify_tree_sampled(p: torch.Tensor, tree: DraftTree, generator: torch.Generator | None) -> Verdict:
    """Recursive rejection sampling down the tree; see the module docstring. `p` is [N + 1, V].

    >>> p = torch.tensor([[0.0, 0.5, 0.5], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    >>> q = torch.tensor([[0.5, 0.5, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    >>> tree = DraftTree(torch.tensor([0, 1]), (-1, -1), q)      # two guesses for one token: 0 first, then 1
    >>> verdict = verify_tree_sampled(p, tree, torch.Generator().manual_seed(0))
    >>> verdict.tested, verdict.path, verdict.next_token          # p(0) = 0: 0 is rejected; what is left of p,
    ((False, False), (), 2)

    norm(max(0, p - q)) = [0, 0, 1], has nothing on 1 (q gave 1 all the mass p wanted on it), so 1 is
    rejected too and the target emits 2, exactly as p alone would have: P(1) = 0.5, P(2) = 0.5 overall.
    """
    check_token_ids(tree.tokens, p.shape[-1])
    tokens = tree.tokens.tolist()
    tested: list[bool | None] = [None] * tree.size
    uniforms: list[float | None] = [None] * tree.size
    path: list[int] = []
    node = ROOT
    while True:
        children = tree.children(node)
        r = p[node + 1]  # [V] what is left of p at this node
        if not children:
            return _verdict(path, int(sample(r[None], generator)), True, tested, uniforms, p, tree)
        s = None if tree.q is None else tree.q[node + 1]  # [V] the law of the next child (None: point masses)
        accepted = None
        for child in children:
            x = tokens[child]
            u = float(torch.rand(1, generator=generator, device=p.device))
            uniforms[child] = u
            if u * (1.0 if s is None else s[x]) < r[x]:  # u < r(x) / s(x) without dividing
                accepted = child
                tested[child] = True
                break
            tested[child] = False
            if s is None:  # a point mass: take x out of what is left of p
                residual = r.clone()
                residual[x] = 0.0
            else:
                residual = (r - s).clamp(min=0)  # [V]
            if residual.sum() > 0:  # (r == s up to rounding: keep r)
                r = residual / residual.sum()
            if s is not None:
                s = s.clone()
                s[x] = 0.0
                if s.sum() > 0:
                    s = s / s.sum()
        if accepted is None:
            return _verdict(path, int(sample(r[None], generator)), False, tested, uniforms, p, tree)
        path.append(accepted)
        node = accepted


def _verdict(
    path: list[int],
    next_token: int,
    full_accept: bool,
    tested: list[bool | None],
    uniforms: list[float | None],
    p: torch.Tensor,
    tree: DraftTree,
) -> Verdict:
    """Pack the walk's outcome with each node's p and q (at its parent, before any residual)."""
    rows = torch.tensor(tree.parents, dtype=torch.long, device=p.device) + 1  # [N]: each node's parent row
    tokens = tree.tokens.to(p.device)
    return Verdict(
        path=tuple(path),
        next_token=next_token,
        full_accept=full_accept,
        tested=tuple(tested),
        uniforms=tuple(uniforms),
        target_probs=tuple(p[rows, tokens].tolist()),
        draft_probs=(tuple(tree.q.to(p.device)[rows, tokens].tolist()) if tree.q is not None else (1.0,) * tree.size)
        if tree.size
        else (),
    )
