"""The drafter contract: what the loop asks of every drafting method, and what it tells it back.

Notation: p is the target, q the draft, gamma the drafted tokens per round, c the cost of a draft
step over a target step, s the cost of one more token in a verification pass (v(k) = 1 + s k).

A drafting method (a small draft model, prompt lookup, a draft with another tokenizer, a token tree,
Token Recycling, lookahead decoding, suffix decoding, the target skipping some of its own layers)
meets `speculative_generate` through three calls, the same for every method:

    drafter.begin(generation)           a new text starts: the prompt, the target, the costs c and s
    proposal = drafter.draft(request)   propose a chain (`Draft`) or a tree (`DraftTree`) after the text
    drafter.observe(verified)           what the target computed in the pass that just ran, and what the rule kept

    one round:   draft ──► ONE target pass over [root, proposal, extra rows] ──► accept/reject ──► caches cut ──► observe

`observe` is called after every target pass, the prompt pass included, with the target's logits for
every row it read (and its hidden states, layer by layer, when the drafter asks): methods that learn
from the target (Token Recycling's adjacency table, a Medusa or EAGLE head) see what it computed, as
vLLM's proposers receive `target_hidden_states`. A proposal may carry `ExtraRows`: tokens of the
drafter's own that ride along in the same pass, with attention of their own (lookahead decoding's
Jacobi window). The proposal's rows never attend to them, so p is untouched; their logits come back in
`observe` and their keys and values are dropped after the pass.

What the loop needs to know about a method is declared once, in `drafter.capabilities`, never probed:
whether it sizes its own rounds (gamma must then be left out), whether the stop rule may cut its chains,
whether it wants hidden states, how many prompt rows' logits it wants, which model a draft step runs
(c is estimated from its weights), and whether it needs full-attention caches. The default choices
(which drafter, which schedule, c and s) live in `specdec.generation.policy`.

Exactness does not depend on the method. A chain carries the q each token was drawn from; a tree with
`q=None` proposes fixed candidates, each a point mass, checked by recursive rejection (kept with
probability r(x), else x removed from what is left of p: `specdec.engine.tree_verification`). A proposal may
depend on anything that happened before this round, the target's logits of earlier passes included,
and never on the uniforms the rule draws for it.

A drafter written against the older contract (`start(prompt, vocab_size)`, `propose(sequence, gamma,
sampling, generator)`, `rollback(length)`: `ChainDrafter`) is wrapped by `as_drafter` and keeps working.

One text at a time: a batch speaks the same three calls with one entry per row (`specdec.generation.batch_drafting`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import torch
from transformers import PreTrainedModel

from specdec.errors import SpecdecError
from specdec.engine.sampling import SamplingConfig
from specdec.engine.trees import DraftTree


@dataclass(frozen=True)
class Draft:
    """A chain proposed in one round and the distributions its tokens were drawn from."""

    tokens: torch.Tensor                   # [k] long, k <= gamma (k may be 0)
    q: torch.Tensor | None                 # [k, V] float32; None when decoding greedily (q is then a point mass)
    extra: ExtraRows | None = None         # rows of the drafter's own in the same target pass (None: none)


Proposal = Draft | DraftTree               # a chain, or a tree (a tree's `extra` rides along likewise)


@dataclass(frozen=True)
class ExtraRows:
    """Rows a drafter adds to the target's verification pass, seen by nothing but themselves.

    Every extra row sees the text before the root; `attend` says what else it sees, over the pass's
    rows in order: the root, the proposal's nodes, then the extra rows (themselves included). Positions
    are offsets from the root's position (the root is 0): a row at offset 3 is read as the third token
    after the root.

    >>> rows = ExtraRows(torch.tensor([7, 8]), torch.tensor([1, 2]), torch.tensor([[1, 1, 0], [1, 1, 1]], dtype=torch.bool))
    >>> rows.size                                            # a chain of two after the root, beside an empty proposal
    2
    """

    tokens: torch.Tensor                   # [E] long
    offsets: torch.Tensor                  # [E] long, positions after the root's
    attend: torch.Tensor                   # [E, 1 + N + E] bool: over (root, the N proposed nodes, the E extra rows)

    @property
    def size(self) -> int:
        return int(self.tokens.numel())


@dataclass(frozen=True)
class Capabilities:
    """What a drafter declares about itself; the loop reads this and nothing else about the method.

    >>> Capabilities().sizes_rounds, Capabilities(sizes_rounds=True, full_attention=True).full_attention
    (False, True)
    """

    sizes_rounds: bool = False                 # True: the drafter sizes each round itself (a tree, a lookup); gamma stays out
    reports_confidence: bool = False           # its chains can be cut by the stop rule (`DraftRequest.keep_drafting`)
    hidden_states: bool = False                # `observe` gets the target's hidden states, every layer, for the rows of each pass
    prompt_rows: int = 1                       # the prompt pass keeps the logits of this many last prompt rows for `observe`
    draft_model: PreTrainedModel | None = None  # the model a draft step runs; c is estimated from its weights (None: c = 0)
    full_attention: bool = False               # needs every cached position (a tree's cache surgery): no sliding windows
    drafts: str = "chain"                      # what a round proposes, in words, for reports ("tree (budget 16)")
    model_free: bool = False                   # holds no model: in a batch every row gets its own copy (`specdec.generation.batch_drafting`)


@dataclass(frozen=True)
class DraftCosts:
    """The costs the default policy prices rounds with, in target steps: c per draft step, s per verified token."""

    c: float
    verify_slope: float


@dataclass(frozen=True)
class Generation:
    """What a drafter learns when a text starts (`begin`)."""

    prompt: torch.Tensor                   # [T] long, on the target's device
    target: PreTrainedModel
    vocab_size: int                        # the width of the target's logits: a q must cover these ids
    max_new_tokens: int
    sampling: SamplingConfig
    costs: DraftCosts


@dataclass(frozen=True)
class DraftRequest:
    """One round's request (`draft`): propose at most `limit` tokens on any path after `sequence`."""

    sequence: torch.Tensor                 # [n] long: the accepted text so far; its last token is the root
    limit: int                             # the schedule's gamma, or what max_new_tokens leaves (always >= 1)
    sampling: SamplingConfig
    generator: torch.Generator | None
    keep_drafting: Callable[[float], bool] | None = None   # the stop rule, for drafters that report confidence


@dataclass(frozen=True)
class Verified:
    """What one target pass computed and what the rule kept (`observe`).

    For the prompt pass `proposal` is None, `rows` is the prompt and `logits` holds its last
    `Capabilities.prompt_rows` rows. For a round, `rows` is [root, the proposal's nodes, the extra
    rows], `logits` the target's logits after the root and after each node, and `extra_logits` after
    each extra row. `path` is the accepted nodes (a chain's first `len(path)` tokens), `tested` each
    node's outcome (True accepted, False rejected, None not tested), `text` the accepted text with the
    target's next token at its end; the target's cache holds every token of it but the last.
    """

    rows: torch.Tensor                             # [R] long
    logits: torch.Tensor                           # [R_kept, V]: prompt pass, the last rows; a round, [1 + N, V]
    extra_logits: torch.Tensor | None              # [E, V], or None
    hidden: tuple[torch.Tensor, ...] | None        # per layer [R, H] (the embeddings first, the last after the final norm)
    proposal: Proposal | None                      # None for the prompt pass
    path: tuple[int, ...]                          # accepted nodes
    tested: tuple[bool | None, ...]                # per node
    next_token: int
    text: torch.Tensor                             # [n'] long: the text after this pass, the next token last
    seconds: float                                 # wall time of the target's pass


@runtime_checkable
class Drafter(Protocol):
    """What `speculative_generate` needs from a drafting method (see the module docstring)."""

    name: str
    passes: int                 # draft model forward passes so far (0 for model-free drafters)
    capabilities: Capabilities

    def begin(self, generation: Generation) -> None:
        """Forget the previous text (a method may keep what it learned across texts); a new one starts."""

    def draft(self, request: DraftRequest) -> Proposal:
        """Propose a chain or a tree of at most `request.limit` tokens on any path after the text."""

    def observe(self, verified: Verified) -> None:
        """See what the target computed in the pass that just ran, and what the rule kept."""


@runtime_checkable
class ChainDrafter(Protocol):
    """The older contract: a chain drafter with `start`, `propose` and `rollback` (wrapped by `as_drafter`)."""

    name: str
    passes: int

    def start(self, prompt: torch.Tensor, vocab_size: int) -> None: ...

    def propose(self, sequence: torch.Tensor, gamma: int, sampling: SamplingConfig, generator: torch.Generator | None) -> Draft: ...

    def rollback(self, length: int) -> None: ...


class ChainMethods:
    """The three calls of the contract for a drafter written with `start`, `propose` and `rollback`.

    `propose` gets the stop rule as `keep_drafting=` only when the drafter reports its confidence.
    After a round the cache of such a drafter is cut to the text the target kept (`rollback`).
    """

    capabilities = Capabilities()

    def begin(self, generation: Generation) -> None:
        self.start(generation.prompt, generation.vocab_size)

    def draft(self, request: DraftRequest) -> Draft:
        if request.keep_drafting is None:
            return self.propose(request.sequence, request.limit, request.sampling, request.generator)
        return self.propose(request.sequence, request.limit, request.sampling, request.generator, keep_drafting=request.keep_drafting)

    def observe(self, verified: Verified) -> None:
        if verified.proposal is not None:
            self.rollback(verified.text.numel() - 1)


class _Wrapped(ChainMethods):
    """A `ChainDrafter` of the older contract, speaking the new one."""

    def __init__(self, inner: ChainDrafter) -> None:
        self.inner = inner
        self.capabilities = Capabilities(reports_confidence=bool(getattr(inner, "reports_confidence", False)))

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def passes(self) -> int:
        return self.inner.passes

    def start(self, prompt: torch.Tensor, vocab_size: int) -> None:
        self.inner.start(prompt, vocab_size)

    def propose(self, *args, **kwargs) -> Draft:
        return self.inner.propose(*args, **kwargs)

    def rollback(self, length: int) -> None:
        self.inner.rollback(length)


def as_drafter(draft: object) -> Drafter:
    """`draft` as a `Drafter`: itself when it speaks the contract, wrapped when it speaks the older one.

    >>> class Nothing:
    ...     name, passes = "nothing", 0
    ...     def start(self, prompt, vocab_size): pass
    ...     def propose(self, sequence, gamma, sampling, generator): return Draft(sequence[:0], None)
    ...     def rollback(self, length): pass
    >>> as_drafter(Nothing()).capabilities.sizes_rounds
    False
    """
    if isinstance(draft, Drafter) and isinstance(draft.capabilities, Capabilities):
        return draft
    if isinstance(draft, ChainDrafter):
        return _Wrapped(draft)
    raise SpecdecError(f"draft must be a transformers causal LM or a drafter (specdec.drafting.Drafter), got {type(draft).__name__}")


def check_proposal(proposal: object, limit: int, name: str) -> None:
    """Refuse a proposal that is not a chain or a tree, or that goes deeper than `limit` tokens."""
    if not isinstance(proposal, (Draft, DraftTree)):
        raise SpecdecError(f"{name} returned a {type(proposal).__name__}; a drafter proposes a specdec.Draft (a chain) or a "
                           "specdec.DraftTree (a tree)")
    depth = proposal.tokens.numel() if isinstance(proposal, Draft) else (int(proposal.depths.max()) if proposal.size else 0)
    if depth > limit:
        raise SpecdecError(f"{name} proposed {depth} tokens on a path where at most {limit} were asked for: a round never "
                           "drafts past the request's limit (max_new_tokens would be overshot)")
