"""One row's round, step by step: what the verification pass reads, the rule, the trace, what the cache keeps.

Notation: p is the target, q the draft, gamma the drafted tokens of a round. The loop
(`specdec.engine.loop`) runs these steps for every row of a batch around ONE shared target pass:

    layout    the pass's rows for one text: [the text not cached yet (the root last), the proposal's N nodes,
              its E extra rows], with the mask and positions a tree or extra rows need (a plain chain is read
              causally, no mask); the first pass is a round whose proposal is empty: the whole prompt, nothing drafted
    judge     the accept/reject rule on the target's logits after the root and each node: the chain
              rule (`specdec.engine.verification`) for a chain, the walk down a tree
              (`specdec.engine.tree_verification`) otherwise; with the round's trace (`Round`)
    kept      the cached tokens the text keeps: the text, the root, the accepted nodes
    text      the text after the round: the accepted tokens and the target's next token
    verified  what the drafter is told of the pass (`Verified`), built in one place

A chain is a tree of width one, so one trace serves both: every drafted node with its p, q, u and
whether it was accepted, the accepted path, and what the round appended to the output, cut after the
first end-of-sequence token. Nothing here runs a model.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from specdec.engine.contract import Verified
from specdec.engine.results import DraftedToken, Round, TokenOrigin, TreeTrace
from specdec.engine.sampling import SamplingConfig, probabilities
from specdec.engine.tree_verification import verify_tree_greedy, verify_tree_sampled
from specdec.engine.trees import ROOT, DraftTree, pass_attention
from specdec.engine.verification import Verdict, verify_greedy, verify_sampled


class Layout(NamedTuple):
    """What one text feeds the verification pass: its text rows, the proposal's nodes, its extra rows."""

    rows: torch.Tensor  # [R] = [m text rows (the root last), N nodes, E extra rows]
    # [R, cached + R] over the cached text and the pass's rows; None: causal (a plain chain)
    attend: torch.Tensor | None
    offsets: torch.Tensor | None  # [R] positions after the cached text; None: 0, 1, 2, ...
    text: int  # m: the text rows (the whole prompt in the first pass, else the root alone)
    nodes: int  # N: the rows after the root whose logits the rule reads


def layout(text: torch.Tensor, proposal: DraftTree, cached: int = 0) -> Layout:
    """The pass's rows for one text: `text` [m >= 1] the text the target has not cached yet (the root last), after
    `cached` tokens.

    >>> layout(torch.tensor([7]), DraftTree.chain(torch.tensor([8, 9]))).attend is None       # a chain: causal
    True
    >>> layout(torch.tensor([7]), DraftTree(torch.tensor([8, 9]), (-1, -1), None)).offsets.tolist()   # two guesses
    [0, 1, 1]
    >>> layout(torch.tensor([5, 6, 7]), DraftTree(torch.tensor([8, 9]), (-1, -1), None),
    ...     cached=2).attend.int().tolist()[1]
    [1, 1, 1, 1, 0, 0, 0]
    """
    nodes = proposal.tokens.to(text.device)  # [N]
    extra = proposal.extra
    rows = torch.cat([text, nodes] + ([extra.tokens.to(text.device)] if extra is not None else []))  # [m + N + E]
    m = text.numel()
    if extra is None and proposal.is_chain:
        return Layout(rows, None, None, m, nodes.numel())
    # [1 + N + E, cached + m + N + E]: the root on
    tail, positions = pass_attention(cached + m - 1, proposal.parents, extra)
    attend = torch.zeros(rows.numel(), cached + rows.numel(), dtype=torch.bool)
    # the text, causal
    attend[: m - 1, : cached + m - 1] = torch.ones(m - 1, cached + m - 1, dtype=torch.bool).tril(diagonal=cached)
    attend[m - 1 :] = tail
    offsets = torch.cat([torch.arange(m - 1), positions - cached])
    return Layout(rows, attend, offsets, m, nodes.numel())


def judge(
    proposal: DraftTree, logits: torch.Tensor, sampling: SamplingConfig, generator: torch.Generator | None
) -> Verdict:
    """The accept/reject rule on the target's logits [1 + N, V] after the root and each node."""
    if sampling.greedy:
        if proposal.is_chain:
            return verify_greedy(logits, proposal.tokens.to(logits.device))
        return verify_tree_greedy(logits, proposal)
    p = probabilities(logits, sampling)  # [1 + N, V]
    if proposal.is_chain:
        q = None if proposal.q is None else proposal.q[: proposal.size].to(p.device)  # [N, V]: the law of each token
        return verify_sampled(p, q, proposal.tokens.to(p.device), generator)
    return verify_tree_sampled(p, proposal, generator)


def trace(proposal: DraftTree, verdict: Verdict, stop_ids: frozenset[int]) -> Round:
    """The round's trace: every drafted node as judged, the accepted path, the output cut after the first
    end-of-sequence token.

    A node is accepted (True) when it reached the output, rejected (False) when the rule tested it and
    said no where the output could have gone on, and None otherwise (never tested, or after an accepted
    end-of-sequence token, as for the tokens after it).

    >>> from specdec.engine.verification import chain_verdict
    >>> round_ = trace(DraftTree.chain(torch.tensor([5, 6])), chain_verdict(1, 2, 9, (None,) * 2, (1.0, 0.0), (1.0,
    ...     ) * 2), frozenset())
    >>> [t.accepted for t in round_.drafted], round_.emitted
    ([True, False], ((5, <TokenOrigin.ACCEPTED: 'accepted'>), (9, <TokenOrigin.RESAMPLED: 'resampled'>)))
    """
    path_tokens = proposal.tokens[list(verdict.path)].tolist()
    if not proposal.size:
        next_origin = TokenOrigin.TARGET
    else:
        next_origin = TokenOrigin.BONUS if verdict.full_accept else TokenOrigin.RESAMPLED
    emitted = _cut_at_stop(
        [(token, TokenOrigin.ACCEPTED) for token in path_tokens] + [(verdict.next_token, next_origin)], stop_ids
    )
    kept = sum(1 for _, origin in emitted if origin == TokenOrigin.ACCEPTED)  # accepted tokens in the output
    in_output = set(verdict.path[:kept])
    reached = {ROOT} | in_output  # nodes whose children the output could reach
    if len(emitted) == kept:  # an accepted end-of-sequence token ended it
        reached.discard(verdict.path[kept - 1])
    drafted = tuple(
        DraftedToken(
            token=token,
            p=verdict.target_probs[node],
            q=verdict.draft_probs[node],
            u=verdict.uniforms[node],
            accepted=True
            if node in in_output
            else (False if verdict.tested[node] is False and parent in reached else None),
        )
        for node, (token, parent) in enumerate(zip(proposal.tokens.tolist(), proposal.parents))
    )
    tree = None if proposal.is_chain else TreeTrace(proposal.parents, verdict.path[:kept])
    return Round(drafted, kept, verdict.next_token, next_origin, tuple(emitted), tree=tree)


def kept_columns(text: int, path: tuple[int, ...]) -> list[int]:
    """The cached tokens a text keeps after a pass: its `text` tokens, the root and the accepted nodes.

    >>> kept_columns(3, (0, 1)), kept_columns(3, (1,))          # a chain's two accepted tokens; a tree's second node
    ([0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 5])
    """
    return list(range(text + 1)) + [text + 1 + node for node in path]


def verified(
    row_layout: Layout,
    logits: torch.Tensor,
    kept_text: int,
    hidden: tuple[torch.Tensor, ...] | None,
    proposal: DraftTree,
    verdict: Verdict,
    text: torch.Tensor,
    finished: bool,
) -> Verified:
    """What the drafter is told of one row's pass (`Verified`), built in
    this one place: `logits` [K + N + E, V] are the row's kept rows."""
    nodes = kept_text + row_layout.nodes
    return Verified(
        rows=row_layout.rows,
        text_rows=row_layout.text,
        logits=logits[:nodes],
        extra_logits=logits[nodes:] if proposal.extra is not None else None,
        hidden=hidden,
        proposal=proposal,
        path=verdict.path,
        tested=verdict.tested,
        next_token=verdict.next_token,
        text=text,
        finished=finished,
    )


def text_after(sequence: torch.Tensor, proposal: DraftTree, path: tuple[int, ...], next_token: int) -> torch.Tensor:
    """The text after a round, the target's next token last: [n + accepted + 1]."""
    accepted = proposal.tokens[list(path)].tolist()
    return torch.cat([sequence, sequence.new_tensor(accepted + [next_token])])


def _cut_at_stop(emitted: list[tuple[int, TokenOrigin]], stop_ids: frozenset[int]) -> list[tuple[int, TokenOrigin]]:
    """The round's output up to and including its first end-of-sequence token."""
    for i, (token, _) in enumerate(emitted):
        if token in stop_ids:
            return emitted[: i + 1]
    return emitted
