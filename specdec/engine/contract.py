"""The drafter contract: what the loop asks of every drafting method, and what it tells it back.

Notation: p is the target, q the draft, gamma the drafted tokens per round, c the cost of a draft
step over a target step, beta the cost of one more token in a verification pass (v(k) = 1 + beta k).

A drafting method (a small draft model, prompt lookup, a draft with another tokenizer, a token tree,
Token Recycling, lookahead decoding, suffix decoding, the target skipping some of its own layers)
meets the loop (`specdec.engine.loop`) through three calls, the same for every method:

    drafter.begin(generation)             texts start: their prompts, the target, the costs c and s
    proposals = drafter.draft(requests)   a `DraftTree` (a chain is a tree of width one) after each text
    drafter.observe(verified)             what the target computed in the pass that just ran, and what the rule kept

    one round:   draft ──► ONE target pass over [root, proposal, extra rows] ──► accept/reject ──► caches cut
                 ──► observe
    first round: (nothing drafted) ONE target pass over the prompt ──► the target's first token ──► observe

Every call speaks about several texts at once, keyed by row: a single text is a batch of one (row 0).
A method that handles its rows one by one writes `{row: ... for row, request in requests.items()}`; one
that can share work across rows does (a draft model drafts every row in one pass per step).

`observe` is called after every target pass, the first one over the prompt included (a round whose
proposal is empty: `Verified` has one shape for every pass), with the target's logits for every row it read (and its
hidden states, layer by layer, when the drafter asks): methods that learn from the target (Token Recycling's adjacency
table, a Medusa or EAGLE head) see what it computed, as vLLM's proposers receive `target_hidden_states`. A proposal may
carry `ExtraRows`: tokens of the drafter's own that ride along in the same pass, with attention of their own (lookahead
decoding's Jacobi window). The proposal's rows never attend to them, so p is untouched; their logits come back in
`observe` and their keys and values are dropped after the pass. When a row's text is complete its `Verified.finished` is
True, and the drafter may forget the row.

What the loop needs to know about a method is declared once, as data, in `drafter.capabilities`, never
probed: whether it sizes its own rounds (gamma must then be left out), whether the stop rule may cut its
chains, whether it wants hidden states (every layer, or the layers it names: an EAGLE-3 head reads three),
how many prompt rows' logits it wants, whether it needs full-attention caches, and whether it reaches into
the target's modules (a runtime without them, llama.cpp, refuses such a method in one line). Hidden states
come from the verification pass that already ran (transformers computes them anyway): no second target
pass. `drafter.draft_model` is the model a draft step runs (`specdec.engine.model`): c is estimated from
its weights and the run counts its forward passes from outside; None for a method without one. The
default choices (which drafter, which schedule, c and s) live above the loop (`specdec.planner`), the
list of methods in the registry (`specdec.registry`).

Exactness does not depend on the method. A proposal's q is the law each node was drawn from; with
`q=None` every node is a fixed candidate, a point mass, checked by recursive rejection (kept with
probability r(x), else x removed from what is left of p: `specdec.engine.tree_verification`). A
proposal may depend on anything that happened before this round, the target's logits of earlier passes
(of any row) included, and never on the uniforms the rule draws for it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import torch

from specdec.engine.model import Model
from specdec.engine.sampling import SamplingConfig
from specdec.engine.trees import DraftTree, check_token_ids
from specdec.errors import SpecdecError


@dataclass(frozen=True)
class Capabilities:
    """What a drafter declares about itself; the loop reads this and nothing else about the method.

    >>> Capabilities().sizes_rounds, Capabilities(sizes_rounds=True, full_attention=True).full_attention
    (False, True)
    """

    sizes_rounds: bool = False  # True: the drafter sizes each round itself (a tree, a lookup); gamma stays out
    reports_confidence: bool = False  # its chains can be cut by the stop rule (`DraftRequest.keep_drafting`)
    hidden_states: bool = False  # `observe` gets the target's hidden states, every layer, for the rows of each pass
    # or only these layers' (0 the embeddings, L after the final norm), in this order
    hidden_layers: tuple[int, ...] = ()
    prompt_rows: int = 1  # the prompt pass keeps the logits of this many last prompt rows for `observe`
    full_attention: bool = False  # needs every cached position (a tree's cache surgery): no sliding windows
    internals: bool = False  # reaches into the target's modules (its layers, its embedding): torch only
    drafts: str = "chain"  # what a round proposes, in words, for reports ("tree (budget 16)")


@dataclass(frozen=True)
class DraftCosts:
    """The costs the default policy prices rounds with, in target steps: c per draft step, and what a verification pass
    over k drafted tokens costs, v(k): measured (`verify`, v(0) = 1 first) where the pair was timed, else 1 + beta k.

    >>> DraftCosts(0.4, 0.05).v(4), DraftCosts(0.4, 0.05, (1.0, 1.72, 1.95)).v(2)
    (1.2, 1.95)
    """

    c: float
    verify_slope: float
    verify: tuple[float, ...] = ()  # measured v(0), v(1), ... (non-decreasing), or () for the slope's line
    catch_up: float = 0.0  # the draft's extra cost after a round that kept every draft (`CostProfile.catch_up`)

    def v(self, k: int) -> float:
        """The cost of a verification pass over k drafted tokens (k +
        1 rows), in target steps; past the table, its last slope."""
        if not self.verify:
            return 1.0 + self.verify_slope * k
        last = len(self.verify) - 1
        if k <= last:
            return self.verify[k]
        slope = self.verify[last] - self.verify[last - 1] if last else self.verify_slope
        return self.verify[last] + slope * (k - last)


@dataclass(frozen=True)
class Generation:
    """What a drafter learns when texts start (`begin`)."""

    prompts: dict[int, torch.Tensor]  # row -> [T_row] long, on the target's device
    target: Model  # the target behind the model contract (`specdec.engine.model`)
    vocab_size: int  # the width of the target's logits: a q must cover these ids
    max_new_tokens: int
    sampling: SamplingConfig
    costs: DraftCosts


@dataclass(frozen=True)
class DraftRequest:
    """One row's request for one round (`draft`): propose at most `limit` tokens on any path after `sequence`."""

    sequence: torch.Tensor  # [n] long: the accepted text so far; its last token is the root
    limit: int  # the schedule's gamma, or what max_new_tokens leaves (always >= 1)
    sampling: SamplingConfig
    generator: torch.Generator | None  # the row's own random stream (draws for q come from it)
    keep_drafting: Callable[[float], bool] | None = None  # the stop rule, for drafters that report confidence


@dataclass(frozen=True)
class Verified:
    """What one target pass computed for one row and what the rule kept (`observe`): every pass has this one shape.

    A pass reads the row's text the target has not cached yet (the whole prompt in the first pass, then
    just the root: the last token of the text), the proposal's N nodes and the drafter's E extra rows:
    `rows` is [text rows, nodes, extra rows], the first `text_rows` of them text. The first pass is a
    round whose proposal is empty. `logits` holds the target's logits after the last K text rows (K is
    1, or up to `Capabilities.prompt_rows` in the first pass; the root's is the K-th) and after each node;
    `extra_logits` after each extra row. `path` is the accepted nodes (a chain's first `len(path)`
    tokens), `tested` each node's outcome (True accepted, False rejected, None not tested), `text` the
    accepted text with the target's next token at its end; the target's cache holds every token of it but the last.
    """

    rows: torch.Tensor  # [R] long: [text rows, N nodes, E extra rows]
    text_rows: int  # the first pass: the prompt's length; then 1 (the root)
    logits: torch.Tensor  # [K + N, V]: after the last K text rows (the root last), then each node
    extra_logits: torch.Tensor | None  # [E, V], or None
    # per layer [R, H]: every layer (the embeddings first), or the declared ones
    hidden: tuple[torch.Tensor, ...] | None
    proposal: DraftTree  # empty when nothing was drafted (the first pass, plain decoding)
    path: tuple[int, ...]  # accepted nodes
    tested: tuple[bool | None, ...]  # per node
    next_token: int
    text: torch.Tensor  # [n'] long: the text after this pass, the next token last
    finished: bool = False  # the row's text is complete (end-of-sequence or max_new_tokens)

    def kept_rows(self) -> list[int]:
        """Which of `rows` the target kept: the text rows and the accepted nodes (their hidden states stay true).

        >>> Verified(torch.tensor([5, 6, 7]), 1, torch.zeros(3, 2), None, None, DraftTree.chain(torch.tensor([6, 7])),
        ...     (0,),
        ...          (True, False), 1, torch.tensor([5, 6, 1])).kept_rows()
        [0, 1]
        """
        return list(range(self.text_rows)) + [self.text_rows + node for node in self.path]


class DraftNetwork(Protocol):
    """What a draft step runs, as far as the planner and the run look at it: a draft model (every
    `specdec.engine.model.Model` is one) or a drafter's own small network (a trained head). Its weight bytes price c; it
    counts its own forward passes, and the run reads the count from outside the drafter."""

    name: str
    passes: int  # forward passes made so far

    def weight_bytes(self) -> int:
        """Bytes of weights one draft step reads."""


class Drafter(Protocol):
    """What the loop needs from a drafting method (see the module docstring)."""

    name: str
    capabilities: Capabilities
    draft_model: DraftNetwork | None  # what a draft step runs (c from its weights, its passes counted); None: none

    def begin(self, generation: Generation) -> None:
        """Forget the previous texts (a method may keep what it learned across texts); these start."""

    def draft(self, requests: dict[int, DraftRequest]) -> dict[int, DraftTree]:
        """Propose, for each row asked, a chain or a tree of at
        most `request.limit` tokens on any path after its text."""

    def observe(self, verified: dict[int, Verified]) -> None:
        """See what the target computed for each row in the pass that just ran, and what the rule kept."""


def is_drafter(draft: object) -> bool:
    """Whether `draft` is a drafter: it declares its `Capabilities` (anything else given as a draft is a model).

    >>> is_drafter(object())
    False
    """
    return isinstance(getattr(draft, "capabilities", None), Capabilities)


def check_drafter(draft: object) -> None:
    """Refuse an object that does not declare its `Capabilities` (it cannot be a drafter).

    >>> check_drafter(object())
    Traceback (most recent call last):
    ...
    specdec.errors.SpecdecError: draft must be a transformers causal LM or a drafter (specdec.engine.contract.Drafter),
    got object
    """
    if not is_drafter(draft):
        raise SpecdecError(
            "draft must be a transformers causal LM or a drafter (specdec.engine.contract.Drafter), got "
            f"{type(draft).__name__}"
        )


def check_proposal(proposal: object, limit: int, vocab_size: int, name: str) -> DraftTree:
    """`proposal` if it is a `DraftTree` no deeper than `limit`, its ids and q within the target's `vocab_size`; else
    one clear error.

    >>> check_proposal(DraftTree.chain(torch.tensor([3, 4])), 4, 4, "my-drafter")
    Traceback (most recent call last):
    ...
    specdec.errors.SpecdecError: my-drafter drafted token id 4, outside the target's vocabulary [0, 4): a drafter
    proposes ids the target's logits cover
    """
    if not isinstance(proposal, DraftTree):
        raise SpecdecError(
            f"{name} returned a {type(proposal).__name__}; a drafter proposes a specdec.DraftTree "
            "(DraftTree.chain(tokens, q) for a chain)"
        )
    check_token_ids(proposal.tokens, vocab_size, name)
    if proposal.depth > limit:
        raise SpecdecError(
            f"{name} proposed {proposal.depth} tokens on a path where at most {limit} were asked for: a round never "
            "drafts past the request's limit (max_new_tokens would be overshot)"
        )
    if proposal.q is not None:
        needed = max(proposal.parents, default=-1) + 2  # rows up to the last node that has children
        if (
            proposal.q.ndim != 2
            or proposal.q.shape[-1] != vocab_size
            or not needed <= proposal.q.shape[0] <= proposal.size + 1
        ):
            raise SpecdecError(
                f"{name} proposed {proposal.size} tokens with q of shape {tuple(proposal.q.shape)}; the rule needs "
                f"q of shape [{needed}..{proposal.size + 1}, {vocab_size}] (the law each node was drawn from), "
                "or q=None for fixed candidates"
            )
    return proposal
