"""A run replayed round by round: what round r drafted, what the target kept, the token it added, the text so far.

Only the Playground's replay uses this; it needs no Streamlit, no torch and no model, so it is tested like
the package. It reads what `pages.common.trace` already laid out (one `TokenSpan` per token, rejected
drafts included, each with its round; one `RoundRow` per round), and picks one round out of it.

Notation: p is the target, q the draft, gamma the drafted tokens of a round. A round r is:

    drafted   the draft's proposal, up to gamma tokens (none for round 0, the prompt pass)
    kept      the accepted prefix: each passed u < p(x) / q(x) (greedy: was the target's top token)
    rejected  the first drafted token that failed (none after a full accept)
    untested  the drafts after it, which the rule never reached
    added     the target's own token from the same pass: resampled from norm(max(0, p - q)) after a
              rejection, the bonus token after a full accept, or (round 0) its first token

    step = replay_step(run.spans, run.rounds, 2)
    step.kept, step.rejected, step.added, step.text     # spans, ready for `tokens_html`
    step.summary()                                       # the round in one sentence

Not handled: a tree round is replayed as the chain it came to (its accepted path, then the rejected
children of the path's end); its other nodes are counted, and drawn by the Playground's tree picture.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pages.common.trace import RoundRow, SpanKind, TokenSpan, visible

TARGETS_OWN = (SpanKind.RESAMPLED, SpanKind.BONUS, SpanKind.TARGET)


@dataclass(frozen=True)
class ReplayStep:
    """One round of a recorded run, as the replay shows it."""

    row: RoundRow
    kept: tuple[TokenSpan, ...]  # drafted and accepted, in order
    rejected: TokenSpan | None  # the drafted token the rule refused (None: none refused)
    added: TokenSpan | None  # the target's own token (None: the round ended at an end-of-sequence token)
    text: tuple[TokenSpan, ...]  # the output after this round, rejected drafts shown where they were refused
    tokens_out: int  # tokens in the output after this round

    @property
    def drafted(self) -> tuple[TokenSpan, ...]:
        """The drafts the rule tested: the accepted prefix, then the refused one."""
        return self.kept + ((self.rejected,) if self.rejected is not None else ())

    def summary(self) -> str:
        """The round in one sentence.

        >>> rows = [RoundRow(0, "", 0, 0, "a", "target", 1), RoundRow(1, "✓b ✗c ·d", 1, 3, "e", "resampled", 2,
        ...     untested=("d",))]
        >>> spans = [TokenSpan("a", 1, SpanKind.TARGET, 0), TokenSpan("b", 2, SpanKind.ACCEPTED, 1),
        ...          TokenSpan("c", 3, SpanKind.REJECTED, 1, u=0.9), TokenSpan("e", 5, SpanKind.RESAMPLED, 1,
        ...     replaces="c")]
        >>> replay_step(spans, rows, 0).summary()
        "Round 0, the prompt pass: the target read the prompt and drew its first token 'a'."
        >>> replay_step(spans, rows, 1).summary()    # doctest: +NORMALIZE_WHITESPACE
        "Round 1: the draft proposed 3 tokens; the target kept 1, refused 'c' (draft 2) and drew 'e' in its place
         from norm(max(0, p - q)); 1 draft after it was never tested. 3 tokens out so far."
        """
        row, out = self.row, f" {self.tokens_out} tokens out so far."
        added = f"'{visible(self.added.text)}'" if self.added is not None else None
        if not row.drafted_count:
            if row.round_index == 0:
                return (
                    f"Round 0, the prompt pass: the target read the prompt and drew its first token {added}."
                    if added
                    else ("Round 0, the prompt pass: the target read the prompt; its first token ended the text.")
                )
            return f"Round {row.round_index}: nothing was drafted; the target drew {added} on its own.{out}"
        tree = f" (a tree of {row.drafted_count} nodes, read as the chain it came to)" if row.tree is not None else ""
        proposed = (
            f"Round {row.round_index}: the draft proposed {row.drafted_count} "
            f"token{'s' * (row.drafted_count != 1)}{tree}; "
        )
        if self.rejected is not None:
            never = len(row.untested)
            after = (
                f"; {never} draft{'s' * (never != 1)} after it {'was' if never == 1 else 'were'} never tested"
                if never
                else ""
            )
            drawn = "from norm(max(0, p - q))" if self.rejected.u is not None else "(greedy: its own most likely token)"
            return (
                f"{proposed}the target kept {len(self.kept)}, refused '{visible(self.rejected.text)}' (draft "
                f"{len(self.kept) + 1}) "
                f"and drew {added} in its place {drawn}{after}.{out}"
            )
        if added is None:
            return f"{proposed}the target kept {len(self.kept)}, the last of them ending the text.{out}"
        return (
            f"{proposed}the target kept all {len(self.kept)} and added the bonus token {added} from the same pass.{out}"
        )


def replay_step(spans: Sequence[TokenSpan], rows: Sequence[RoundRow], index: int) -> ReplayStep:
    """Round `index` (0: the prompt pass) of a run laid out by `pages.common.trace`: its spans and the text so far.

    >>> rows = [RoundRow(0, "", 0, 0, "a", "target", 1), RoundRow(1, "✓b ✓c", 2, 2, "d", "bonus", 3)]
    >>> spans = [TokenSpan("a", 1, SpanKind.TARGET, 0), TokenSpan("b", 2, SpanKind.ACCEPTED, 1),
    ...          TokenSpan("c", 3, SpanKind.ACCEPTED, 1), TokenSpan("d", 4, SpanKind.BONUS, 1)]
    >>> step = replay_step(spans, rows, 1)
    >>> [s.text for s in step.kept], step.rejected, step.added.text, "".join(s.text for s in step.text)
    (['b', 'c'], None, 'd', 'abcd')
    """
    if not 0 <= index < len(rows):
        raise IndexError(f"round {index} is not in this run: it has rounds 0 to {len(rows) - 1}")
    row = rows[index]
    mine = [span for span in spans if span.round_index == row.round_index]
    text = tuple(span for span in spans if span.round_index <= row.round_index)
    return ReplayStep(
        row=row,
        kept=tuple(span for span in mine if span.kind is SpanKind.ACCEPTED),
        rejected=next((span for span in mine if span.kind is SpanKind.REJECTED), None),
        added=next((span for span in mine if span.kind in TARGETS_OWN), None),
        text=text,
        tokens_out=sum(span.in_output for span in text),
    )
