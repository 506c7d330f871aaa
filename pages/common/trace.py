"""A speculative generation turned into what a person can read: one span per token, one row per round.

Only the dashboard uses this (the Playground's coloured text and round table); it needs no
Streamlit and no torch, so it is tested like the package.

Notation: p is the target, q the draft, gamma the drafted tokens per round, alpha the acceptance
rate. The engine (`specdec.engine.loop`) records every round: the drafted tokens with p(x), q(x)
and the uniform draw u that tested them, how many were accepted, and the token the target added.
This module lays that record out in reading order, the way the dashboard colours it:

    accepted   a drafted token that passed u < p(x) / q(x)
    rejected   the drafted token that failed the test (shown struck through; not in the output)
    resampled  the token the target drew from norm(max(0, p - q)) in its place
    bonus      the extra token the target adds when all drafted tokens pass
    target     a token the target produced with nothing drafted (the prompt pass, plain decoding)

    finished = trace(result, decode=lambda ids: tokenizer.decode(ids))
    "".join(span.text for span in finished.spans if span.in_output)   # the generated text
    [row.drafted for row in finished.rows]                            # the per-round table

    builder = TraceBuilder(decode)                           # or round by round, while generating:
    speculative_generate(..., on_round=builder.add_round)    # builder.spans, builder.rows grow

Text comes from a `decode` callable (token ids -> str), so this module needs no tokenizer, no
model and no torch. Each token's text is what decoding adds when the token is appended to the
output so far; a token that ends inside a multi-byte character (the decoder then shows U+FFFD)
contributes nothing until the character is complete, so no replacement characters appear.

A token-tree round (`specdec.TreeDrafter`) reads like a chain: the accepted path, then the children
of its last node the target rejected; its row says how many other nodes the tree had, and carries a
`TreeView` (every node with its depth, a place to draw it, p, q, u and how the rule treated it) for
the Playground's tree picture.

Not handled: drafted tokens that were never tested (after a rejection) get no span; the round
table lists them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from enum import Enum

from specdec.engine.results import DraftedToken, GenerationResult, Round, TokenOrigin

Decode = Callable[[list[int]], str]
INCOMPLETE = "\ufffd"  # what decoders show for bytes that do not yet form a character


class SpanKind(str, Enum):
    """How a piece of the displayed text arose (the output's origins, plus rejected drafts)."""

    ACCEPTED = "accepted"
    REJECTED = "rejected"
    RESAMPLED = "resampled"
    BONUS = "bonus"
    TARGET = "target"


@dataclass(frozen=True)
class TokenSpan:
    """One token as displayed: its text, how it arose and the numbers the accept test used."""

    text: str
    token: int
    kind: SpanKind
    round_index: int  # 0 is the prompt pass
    p: float | None = None  # target probability of a drafted token (after warping)
    q: float | None = None  # draft probability of a drafted token (after warping)
    u: float | None = None  # the uniform draw it was tested with; None when greedy
    replaces: str | None = None  # for a resampled token: the text of the rejected draft

    @property
    def in_output(self) -> bool:
        """Whether the token is part of the generated text (rejected drafts are not)."""
        return self.kind is not SpanKind.REJECTED

    @property
    def ratio(self) -> float | None:
        """p/q, the acceptance threshold u is compared with (None when unknown or q = 0)."""
        if self.p is None or not self.q:
            return None
        return self.p / self.q

    def explain(self) -> str:
        """One line on why this token is here, with the numbers that decided it.

        >>> TokenSpan(" cat", 9, SpanKind.ACCEPTED, 1, p=0.6, q=0.5, u=0.3).explain()
        'accepted: u = 0.300 < p/q = 1.200 (p = 0.600, q = 0.500)'
        >>> TokenSpan(" dog", 4, SpanKind.REJECTED, 1, p=0.1, q=0.4, u=0.7).explain()
        'rejected: u = 0.700 >= p/q = 0.250 (p = 0.100, q = 0.400), so the target resampled'
        """
        numbers = f"(p = {self.p:.3f}, q = {self.q:.3f})" if self.p is not None and self.q is not None else ""
        if self.kind is SpanKind.ACCEPTED:
            if self.u is None:
                return "accepted: the draft's choice is the target's most likely token (greedy)"
            return f"accepted: u = {self.u:.3f} < p/q = {self.ratio:.3f} {numbers}"
        if self.kind is SpanKind.REJECTED:
            if self.u is None:
                return "rejected: the target's most likely token is another one (greedy)"
            ratio = "inf" if self.ratio is None else f"{self.ratio:.3f}"
            return f"rejected: u = {self.u:.3f} >= p/q = {ratio} {numbers}, so the target resampled"
        if self.kind is SpanKind.RESAMPLED:
            return f"resampled by the target from norm(max(0, p - q)) in place of the rejected {self.replaces!r}"
        if self.kind is SpanKind.BONUS:
            return "bonus: every drafted token was accepted, so the same target pass gave one more token from p"
        return "target: drawn from p with nothing drafted (the prompt pass, or plain decoding)"


@dataclass(frozen=True)
class TreeNode:
    """One drafted node of a token tree, placed for drawing: x is its depth, y its row."""

    text: str
    depth: int
    y: float
    parent: int  # index of the parent node; -1 for the root's children
    p: float
    q: float
    u: float | None
    status: str  # "accepted" (on the path in the output), "rejected" or "not tested"


@dataclass(frozen=True)
class TreeView:
    """A tree round ready to draw: the root (the last token before the round), its nodes, the target's token."""

    root: str
    nodes: tuple[TreeNode, ...]
    added: str
    added_kind: str  # "bonus" or "resampled"


@dataclass(frozen=True)
class RoundRow:
    """One row of the per-round table."""

    round_index: int
    drafted: str  # each drafted token with a mark: ✓ accepted, ✗ rejected, · never tested
    accepted: int
    drafted_count: int
    added: str  # the token the target added
    added_kind: str  # "resampled", "bonus" or "target"
    emitted: int  # tokens this round appended to the output
    tree: TreeView | None = None  # a tree round's nodes, for drawing
    draft_ms: float = 0.0  # time inside the drafter this round
    verify_ms: float = 0.0  # time inside the target's pass this round
    untested: tuple[str, ...] = ()  # drafted tokens the rule never reached (after a rejection), as shown


class _IncrementalText:
    """The output text grown token by token, telling what each new token adds.

    Only the last `CONTEXT` tokens are decoded each time, so a long output costs no more per
    token than a short one; that context is plenty for tokenizers that merge spaces or bytes.
    """

    CONTEXT = 16

    def __init__(self, decode: Decode) -> None:
        self.decode = decode
        self.tokens: list[int] = []

    def _stable(self, tokens: list[int]) -> str:
        return self.decode(tokens).rstrip(INCOMPLETE)

    def peek(self, extra: Sequence[int]) -> list[str]:
        """What each token of `extra` would add after the current text, without keeping them."""
        tokens = self.tokens[-self.CONTEXT :]
        before, pieces = self._stable(tokens), []
        for token in extra:
            tokens = tokens + [token]
            after = self._stable(tokens)
            pieces.append(after[len(before) :] if after.startswith(before) else self._stable([token]))
            before = after
        return pieces

    def append(self, token: int) -> str:
        """Add `token` to the output; return the text it adds."""
        piece = self.peek([token])[0]
        self.tokens.append(token)
        return piece


class TraceBuilder:
    """Spans and round rows built as rounds (or, for plain decoding, tokens) arrive, for streaming display.

    >>> builder = TraceBuilder(lambda ids: "".join(f"<{i}>" for i in ids))
    >>> builder.add_token(5); builder.add_token(6)
    >>> [(span.text, span.kind.value) for span in builder.spans]
    [('<5>', 'target'), ('<6>', 'target')]
    """

    def __init__(self, decode: Decode) -> None:
        self.text = _IncrementalText(decode)
        self.spans: list[TokenSpan] = []
        self.rows: list[RoundRow] = []

    def add_token(self, token: int) -> None:
        """A token the target produced on its own (plain decoding)."""
        self.spans.append(TokenSpan(self.text.append(token), token, SpanKind.TARGET, 0))

    def add_round(self, round_: Round) -> None:
        """One speculative round: its spans in reading order, and its row of the round table."""
        if round_.tree is not None:
            self._add_tree_round(round_)
            return
        index = len(self.rows)
        proposal = self.text.peek([drafted.token for drafted in round_.drafted])
        pieces = []
        for position, (token, origin) in enumerate(round_.emitted):
            replaces = None
            if origin is TokenOrigin.ACCEPTED:
                drafted = round_.drafted[position]
                pieces.append(self.text.append(token))
                self.spans.append(
                    TokenSpan(pieces[-1], token, SpanKind.ACCEPTED, index, drafted.p, drafted.q, drafted.u)
                )
                continue
            if origin is TokenOrigin.RESAMPLED:
                rejected = round_.drafted[round_.accepted]
                replaces = self.text.peek([rejected.token])[0]
                self.spans.append(
                    TokenSpan(replaces, rejected.token, SpanKind.REJECTED, index, rejected.p, rejected.q, rejected.u)
                )
            pieces.append(self.text.append(token))
            self.spans.append(TokenSpan(pieces[-1], token, SpanKind(origin.value), index, replaces=replaces))
        self.rows.append(_round_row(index, round_, proposal, pieces))

    def _add_tree_round(self, round_: Round) -> None:
        """A tree round, read as the chain it came to (the path, then the rejected children of its end)."""
        root = visible(next((span.text for span in reversed(self.spans) if span.in_output), ""))
        nodes = [visible(self.text.decode([drafted.token])) for drafted in round_.drafted]  # each node's own text
        chain = chain_view(round_)
        self.add_round(chain)
        extra = len(round_.drafted) - len(chain.drafted)
        row = self.rows[-1]
        self.rows[-1] = replace(
            row,
            drafted=row.drafted + (f"  (+{extra} other nodes)" if extra else ""),
            drafted_count=len(round_.drafted),
            tree=tree_view(round_, root, nodes, row.added, row.added_kind),
        )


def chain_view(round_: Round) -> Round:
    """A tree round as a chain: the accepted path, then the children of the path's last node that were rejected.

    >>> from specdec.engine.results import DraftedToken as D, TreeTrace, TokenOrigin as O
    >>> tree_round = Round((D(5, 0.0, 1.0, None, False), D(6, 1.0, 1.0, None, True), D(7, 0.0, 1.0, None, False)),
    ...                    1, 8, O.RESAMPLED, ((6, O.ACCEPTED), (8, O.RESAMPLED)), tree=TreeTrace((-1, -1, 1), (1,)))
    >>> [d.token for d in chain_view(tree_round).drafted]
    [6, 7]
    """
    tree = round_.tree
    end = tree.path[-1] if tree.path else -1
    rejected = [
        node for node, parent in enumerate(tree.parents) if parent == end and round_.drafted[node].accepted is False
    ]
    return replace(round_, drafted=tuple(round_.drafted[node] for node in (*tree.path, *rejected)), tree=None)


def tree_view(round_: Round, root: str, texts: Sequence[str], added: str, added_kind: str) -> TreeView:
    """Place every node of a tree round for drawing: x = depth, leaves one row apart, parents centred over their
    children.

    >>> from specdec.engine.results import DraftedToken as D, TreeTrace, TokenOrigin as O
    >>> tree_round = Round((D(5, 0.0, 1.0, None, False), D(6, 1.0, 1.0, None, True), D(7, 0.0, 1.0, None, False)),
    ...                    1, 8, O.RESAMPLED, ((6, O.ACCEPTED), (8, O.RESAMPLED)), tree=TreeTrace((-1, -1, 1), (1,)))
    >>> [(n.text, n.depth, n.y, n.status) for n in tree_view(tree_round, "r", ["a", "b", "c"], "d", "resampled").nodes]
    [('a', 1, 0.0, 'rejected'), ('b', 1, 1.0, 'accepted'), ('c', 2, 1.0, 'rejected')]
    """
    parents = round_.tree.parents
    children: dict[int, list[int]] = {}
    for node, parent in enumerate(parents):
        children.setdefault(parent, []).append(node)
    rows: dict[int, float] = {}
    next_row = 0.0

    def place(node: int) -> float:
        nonlocal next_row
        if node not in children:
            rows[node], next_row = next_row, next_row + 1
            return rows[node]
        rows[node] = sum(place(child) for child in children[node]) / len(children[node])
        return rows[node]

    for top in children.get(-1, []):
        place(top)
    depths: list[int] = []
    for parent in parents:
        depths.append(1 if parent == -1 else depths[parent] + 1)
    status = {True: "accepted", False: "rejected", None: "not tested"}
    nodes = tuple(
        TreeNode(
            texts[node], depths[node], rows[node], parent, drafted.p, drafted.q, drafted.u, status[drafted.accepted]
        )
        for node, (parent, drafted) in enumerate(zip(parents, round_.drafted))
    )
    return TreeView(root, nodes, added, added_kind)


def _round_row(index: int, round_: Round, proposal: list[str], pieces: list[str]) -> RoundRow:
    drafted = " ".join(f"{_mark(d)}{visible(piece)}" for d, piece in zip(round_.drafted, proposal))
    target_added = bool(round_.emitted) and round_.emitted[-1][1] is not TokenOrigin.ACCEPTED
    added = visible(pieces[-1]) if target_added else ""
    added_kind = round_.next_origin.value if target_added else "(stopped at end of text)"
    untested = tuple(visible(piece) for d, piece in zip(round_.drafted, proposal) if d.accepted is None)
    return RoundRow(
        index,
        drafted,
        round_.accepted,
        len(round_.drafted),
        added,
        added_kind,
        len(round_.emitted),
        draft_ms=1000 * round_.draft_s,
        verify_ms=1000 * round_.verify_s,
        untested=untested,
    )


def trace(result: GenerationResult, decode: Decode) -> TraceBuilder:
    """The whole trace of a finished run (speculative or plain): its `spans` and its round `rows`.

    Every output token in order, with each rejected draft just before the token that replaced it;
    one row per round, the prompt pass being round 0.

    >>> from specdec.engine.results import DraftedToken, GenerationStats, Round, TokenOrigin as O
    >>> rounds = (Round((), 0, 5, O.TARGET, ((5, O.TARGET),)),
    ...           Round((DraftedToken(6, 0.9, 0.8, 0.1, True), DraftedToken(7, 0.1, 0.6, 0.9, False)),
    ...                 1, 8, O.RESAMPLED, ((6, O.ACCEPTED), (8, O.RESAMPLED))))
    >>> stats = GenerationStats(3, 2, 1, 2, 2, 1.0, 0.1, 0.8)
    >>> finished = trace(GenerationResult([5, 6, 8], stats, rounds), lambda ids: "".join(f"<{i}>" for i in ids))
    >>> [(span.text, span.kind.value) for span in finished.spans]
    [('<5>', 'target'), ('<6>', 'accepted'), ('<7>', 'rejected'), ('<8>', 'resampled')]
    >>> finished.rows[1].drafted
    '✓<6> ✗<7>'
    """
    builder = TraceBuilder(decode)
    if result.rounds:
        for round_ in result.rounds:
            builder.add_round(round_)
    else:
        for token in result.tokens:
            builder.add_token(token)
    return builder


def _mark(drafted: DraftedToken) -> str:
    return {True: "✓", False: "✗", None: "·"}[drafted.accepted]


def visible(text: str) -> str:
    """Text with whitespace made visible for a table cell.

    >>> visible(" x\\n")
    '␣x↵'
    """
    return text.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥") or "∅"


def count_kinds(spans: Sequence[TokenSpan]) -> dict[str, int]:
    """How many spans of each kind, every kind listed.

    >>> count_kinds([TokenSpan("a", 1, SpanKind.BONUS, 1)])["bonus"]
    1
    """
    counts = {kind.value: 0 for kind in SpanKind}
    for span in spans:
        counts[span.kind.value] += 1
    return counts


def round_records(rows: Sequence[RoundRow]) -> list[dict]:
    """The round table as plain records, for the CSV download (one per round, the prompt pass first).

    >>> round_records([RoundRow(1, "✓a ✗b", 1, 2, "c", "resampled", 2, draft_ms=3.0, verify_ms=9.5)])[0]["verify ms"]
    9.5
    """
    return [
        {
            "round": row.round_index,
            "drafted (✓ accepted, ✗ rejected, · not tested)": row.drafted,
            "accepted": row.accepted,
            "drafted count": row.drafted_count,
            "target added": row.added,
            "how": row.added_kind,
            "tokens out": row.emitted,
            "draft ms": round(row.draft_ms, 3),
            "verify ms": round(row.verify_ms, 3),
        }
        for row in rows
    ]


def trace_json(result: GenerationResult, decode: Decode, about: dict) -> dict:
    """A run's full trace for the JSON download: what it ran with (`about`), its stats, and every round's tokens.

    Each drafted token carries its id, its text, p, q, the uniform u it was tested with and whether it
    was accepted (None: never tested); each round its accepted count, the token the target added,
    how (bonus, resampled, target), and its draft and verify seconds; the timeline says when each target
    pass ended on the run's clock (`specdec.engine.results.PassTime`).
    """
    return {
        **about,
        "stats": {field: getattr(result.stats, field) for field in result.stats.__dataclass_fields__},
        "tokens": list(result.tokens),
        "text": decode(list(result.tokens)),
        "rounds": [
            {
                "round": index,
                "drafted": [
                    {"token": d.token, "text": decode([d.token]), "p": d.p, "q": d.q, "u": d.u, "accepted": d.accepted}
                    for d in round_.drafted
                ],
                "tree_parents": list(round_.tree.parents) if round_.tree else None,
                "accepted": round_.accepted,
                "added": {
                    "token": round_.next_token,
                    "text": decode([round_.next_token]),
                    "how": round_.next_origin.value,
                },
                "emitted": [token for token, _ in round_.emitted],
                "draft_s": round_.draft_s,
                "verify_s": round_.verify_s,
            }
            for index, round_ in enumerate(result.rounds)
        ],
        "timeline": [asdict(time) for time in result.timeline],
    }
