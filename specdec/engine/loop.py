"""The loop: draft, verify every draft in ONE target pass, keep what the rule accepts, for every text at once.

Notation: p is the target, q the draft, gamma the drafted tokens per round, alpha the chance a tested draft
is accepted (Leviathan et al. 2023, Algorithm 1; Chen et al. 2023, Algorithm 2). One text is a batch of one row;
a batch of texts runs the very same steps, row by row, around shared passes:

    1. the first pass: ONE target pass over every prompt (a round in which nothing was drafted); each
       row's first new token is drawn from its own p
    2. rounds, while some row still generates:
       a. draft    each row's drafter proposes at most gamma tokens (fewer near max_new_tokens: a row
                   with no room left drafts nothing)
       b. verify   ONE target pass over every row's last token (the root) and its proposal: p after each
       c. the rule row by row, each row with its own random stream: keep a prefix of the proposal (a row
                   may keep 4 tokens while its neighbour keeps none), then one token from the target
                   (resampled after a rejection, or the bonus token after a full accept)
       d. caches   row by row, forget the rejected tokens (roll back) and keep the rest
       e. observe  the drafter is told what the target computed and what was kept (some learn from it)
       rows that hit their end-of-sequence token or max_new_tokens leave the batch

    A proposal is a `DraftTree`; a chain is a tree of width one. A tree (and a drafter that asks for extra rows)
    only changes what the verify pass feeds (`specdec.engine.rounds`) and which path the caches keep.

Cache invariant after every round: the target's cache holds every token of each row's text but the
last (whose keys and values the next round's pass computes). Each drafter keeps its own state.

The loop knows drafters only through the contract (`specdec.engine.contract`): it reads their declared
capabilities and never asks which method it holds. It knows schedules only through `GammaSchedule`. It
does not time itself, load anything or print: it yields each pass's decided rounds, `[(row, Round), ...]`,
and whoever runs it (`specdec.generation`) times the calls from outside, collects the rounds and streams them.

The output of every row has exactly the target's distribution, and with temperature 0 exactly the target's
greedy tokens, whatever the drafter proposes and whatever the other rows do.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch

from specdec.engine.contract import DraftCosts, Drafter, DraftRequest, Generation, check_proposal
from specdec.engine.inputs import Decoding, row_generator
from specdec.engine.model import Model, Rows
from specdec.engine.results import Round
from specdec.engine.rounds import judge, kept_columns, layout, text_after, trace, verified
from specdec.engine.schedule import GammaSchedule
from specdec.engine.trees import DraftTree

# the rounds one pass decided: (row, its round), in the cache's row order
Decided = list[tuple[int, Round]]


def speculate(
    model: Model,
    target: Rows,
    drafter: Drafter,
    prompts: Sequence[torch.Tensor],
    decoding: Decoding,
    schedules: Sequence[GammaSchedule | None],
    costs: DraftCosts,
    stop_ids: frozenset[int],
) -> Iterator[Decided]:
    """Generate after each prompt [T_b] (rows 0..B-1 of `target`, an empty cache of `model`); yield each pass's rounds.

    `schedules[b]` picks row b's gamma (None: the drafter sizes its rounds); `costs` are told to the drafter."""
    sampling, capabilities, vocab = decoding.sampling, drafter.capabilities, model.vocab_size
    generators = [row_generator(decoding.seed, row, prompts[row].device) for row in range(len(prompts))]
    drafter.begin(Generation(dict(enumerate(prompts)), model, vocab, decoding.max_new_tokens, sampling, costs))
    wants_hidden = capabilities.hidden_states or bool(capabilities.hidden_layers)
    texts, counts, active = dict(enumerate(prompts)), dict.fromkeys(range(len(prompts)), 0), list(target.rows)
    while active:  # 1. the first pass, then 2. rounds
        requests = {}
        for row in (row for row in active if counts[row]):  # the first pass drafts nothing
            room, schedule = decoding.max_new_tokens - counts[row] - 1, schedules[row]  # never overshoot
            limit = room if schedule is None else min(schedule.next_gamma(), room)
            if limit > 0:
                stop_rule = schedule.keep_drafting if schedule is not None and capabilities.reports_confidence else None
                requests[row] = DraftRequest(texts[row], limit, sampling, generators[row], stop_rule)
        proposed = drafter.draft(requests) if requests else {}  # a. every row proposes
        proposals = {row: DraftTree.empty() for row in active}
        for row, request in requests.items():
            proposals[row] = check_proposal(proposed.get(row), request.limit, vocab, drafter.name)
        roots = {row: texts[row][-1:] if counts[row] else texts[row] for row in active}  # the root, or the whole prompt
        layouts = {row: layout(roots[row], proposals[row], target.length(row)) for row in active}
        kept = {row: min(capabilities.prompt_rows, lay.text) for row, lay in layouts.items()}  # text rows with logits
        ordered = [layouts[row] for row in target.rows]
        logits, hidden = target.feed(  # b. one pass, ragged
            [lay.rows for lay in ordered],
            last=max(kept[row] + lay.rows.numel() - lay.text for row, lay in layouts.items()),
            attend=[lay.attend for lay in ordered],
            offsets=[lay.offsets for lay in ordered],
            hidden=wants_hidden,
        )
        seen, decided = {}, []
        for i, row in enumerate(target.rows):  # c. the rule, d. the cache, row by row
            proposal, lay = proposals[row], layouts[row]
            row_logits = logits[i, logits.shape[1] - (kept[row] + lay.rows.numel() - lay.text) :]  # [K + N + E, V]
            verdict = judge(proposal, row_logits[kept[row] - 1 : kept[row] + lay.nodes], sampling, generators[row])
            round_ = trace(proposal, verdict, stop_ids)
            target.keep(row, kept_columns(texts[row].numel() - 1, verdict.path))
            texts[row] = text_after(texts[row], proposal, verdict.path, verdict.next_token)
            counts[row] += len(round_.emitted)
            if (schedule := schedules[row]) is not None and proposal.size:
                schedule.update(proposal.size, verdict.accepted)
            finished = counts[row] >= decoding.max_new_tokens or round_.emitted[-1][0] in stop_ids
            states = _rows_of(hidden, capabilities.hidden_layers, i, lay.rows.numel())
            seen[row] = verified(lay, row_logits, kept[row], states, proposal, verdict, texts[row], finished)
            decided.append((row, round_))
        drafter.observe(seen)  # e. what the target computed
        yield decided
        active = [row for row in active if not seen[row].finished]
        target.compact(active)  # rows that are done leave the batch


def _rows_of(
    hidden: tuple[torch.Tensor, ...] | None, layers: tuple[int, ...], i: int, count: int
) -> tuple[torch.Tensor, ...] | None:
    """The hidden states [count, H] of the cache's i-th row in a pass's [B, M, H] (its last `count` rows), for each of
    the `layers` a drafter declared (every layer when it named none)."""
    if hidden is None:
        return None
    declared = hidden if not layers else tuple(hidden[layer] for layer in layers)
    return tuple(layer[i, layer.shape[1] - count :] for layer in declared)
