"""Speculative and plain decoding for a batch of texts: every row its own accepted length, one target pass per round.

Notation: p is the target, q the draft, gamma the drafted tokens per round, c a draft step's cost over
a target step, v(k) the cost of a target pass over k tokens in one-token steps.

The loop is the single-text loop of `specdec.generation.speculative`, row by row, around shared passes:

    prompt pass     ONE target pass over every prompt (of different lengths), each row's first token from its own p
    round, while some row still generates:
      a. draft      each row its own proposal (a draft model: one draft pass per step for all rows;
                    a model-free drafter: a copy per row); a row with no room left drafts nothing
      b. verify     ONE target pass over every row's [root, proposal, extra rows], ragged
      c. the rule   row by row, with the row's own random generator: a row may accept 4 tokens while
                    its neighbour accepts none
      d. caches     row by row: each keeps its own text (`specdec.engine.batch_cache`); rows that hit their
                    end-of-sequence token or max_new_tokens leave the batch

The bookkeeping that makes this exact is per row: its own accepted count, its own cache length, its own
positions. The classic bug is one count for the batch (`UniformAdvanceCache`, kept to show what it
breaks: chapter 4, "Batches").

Row b samples from its own generator, seeded with `seed + b`, so rows are independent draws and a batch
of one is today's single-text run with `seed`. Each row's result has the type a single run returns; its
times are the batch's (every row waited for the whole batch), so a batch's throughput is all its new
tokens over one wall time (`batch_throughput`).

Why batches shrink the gain: a pass over B x (gamma + 1) rows is only free while the target's pass is
bound by reading its weights; as B grows the pass becomes bound by arithmetic and v(gamma) climbs
towards gamma + 1, while plain decoding of the same batch gets B tokens per pass for nearly the price of
one. Chapter 4 measures it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import replace

import torch
from transformers import PreTrainedModel

from specdec.engine.batch_cache import BatchCache, check_batchable
from specdec.engine.costs import verify_slope_guess
from specdec.engine.costs import weight_cost_ratio
from specdec.generation.batch_drafting import batch_drafter
from specdec.engine.contract import DraftCosts, DraftRequest, Generation, Proposal, Verified, check_proposal
from specdec.generation.policy import DraftingPlan, describe, schedule_for
from specdec.errors import SpecdecError
from specdec.engine.inputs import Decoding, check_counts, check_fits_context, eos_ids, make_generator
from specdec.engine.results import GenerationResult, GenerationStats, Round, TokenOrigin
from specdec.engine.sampling import choose_next
from specdec.engine.schedule import GammaSchedule
from specdec.generation.speculative import judge
from specdec.generation.speculative import kept_columns
from specdec.generation.speculative import pass_rows
from specdec.generation.speculative import propose
from specdec.generation.speculative import run_stats
from specdec.generation.speculative import text_after
from specdec.engine.stop_rule import ConfidenceStop
from specdec.engine.timing import Stopwatch


class UniformAdvanceCache(BatchCache):
    """THE CLASSIC BUG, kept for the lessons and the tests' negative controls: one cache length for the whole batch.

    After each round every row keeps as many of the pass's tokens as the row that kept most, as a padded
    cache with a single length does. A row that rejected early keeps the keys and values of tokens it
    rejected, and its target reads them from then on. The output tokens are still chosen row by row, so
    the first round is right and the damage starts in the second.
    """

    def feed(self, tokens, keep=1, attend=None, offsets=None, hidden=False):
        self._before = list(self.lengths)
        return super().feed(tokens, keep, attend, offsets, hidden)

    def keep(self, row: int, tokens: list[int]) -> None:
        self._kept = getattr(self, "_kept", {}) | {row: tokens}

    def compact(self, rows: Sequence[int] | None = None) -> None:
        kept = getattr(self, "_kept", {})
        if kept:
            before = dict(zip(self.rows, self._before))
            advance = max(len(tokens) - before[row] for row, tokens in kept.items())   # one count for every row
            for row in kept:
                i = self.rows.index(row)
                super().keep(row, list(range(min(before[row] + advance, self.lengths[i]))))
            self._kept = {}
        super().compact(rows)


def speculative_generate_batch(
    target: PreTrainedModel,
    draft: object,
    prompts: Sequence[torch.Tensor],
    *,
    gamma: int | GammaSchedule | None = None,
    max_new_tokens: int = 64,
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    seed: int | None = None,
    eos_token_id: int | list[int] | None = None,
    on_round: Callable[[int, Round], None] | None = None,
    cache_type: type[BatchCache] = BatchCache,
) -> list[GenerationResult]:
    """`speculative_generate` for several prompts [T_b] at once: one result per row, in order.

    `draft` is a draft model (it drafts chains, one pass per step for all rows, with the stop rule by
    default) or a model-free drafter (one copy per row). `on_round(row, round)` is called with every
    row's rounds as they are decided. `cache_type` exists for the lessons (`UniformAdvanceCache`).
    """
    check_counts(max_new_tokens, None if gamma is None or isinstance(gamma, GammaSchedule) else gamma)
    if isinstance(draft, DraftingPlan):
        if gamma is not None:
            raise SpecdecError("a DraftingPlan carries its own schedule: leave gamma out")
        gamma, draft = draft.schedule, draft.drafter
    check_batchable(target, "target")
    drafter = batch_drafter(draft)
    capabilities = drafter.capabilities
    if capabilities.sizes_rounds and gamma is not None:
        raise SpecdecError(f"{drafter.name} sizes its own rounds (a tree's budget, a lookup's match): leave gamma out")
    costs = DraftCosts(weight_cost_ratio(target, capabilities.draft_model), verify_slope_guess(target))
    template = schedule_for(gamma, drafter, costs)
    stop_rule = isinstance(template, ConfidenceStop) and capabilities.reports_confidence
    decoding = Decoding(max_new_tokens, temperature, top_k, top_p, seed)
    sampling, stop_ids, rows = decoding.sampling, eos_ids(eos_token_id), range(len(prompts))
    prompts = [prompt.to(target.device) for prompt in prompts]
    for prompt in prompts:
        check_fits_context(target, prompt.numel(), max_new_tokens, "target")
    generators = [make_generator(None if seed is None else seed + row, target.device) for row in rows]
    schedules = [None if template is None else copy.deepcopy(template) for _ in rows]
    watch = Stopwatch(target.device)
    vocab = target.get_output_embeddings().out_features
    cache = cache_type(target, len(prompts))
    drafter.begin({row: Generation(prompts[row], target, vocab, max_new_tokens, sampling, costs) for row in rows})

    with watch.measure("verify"):                                                     # the prompt pass, every row
        logits, hidden = cache.feed(prompts, keep=capabilities.prompt_rows, hidden=capabilities.hidden_states)
    rounds: list[list[Round]] = [[] for _ in rows]
    tokens: list[list[int]] = [[] for _ in rows]
    texts: list[torch.Tensor] = []
    seen = {}
    for row in rows:
        first, _ = choose_next(logits[row, -1], sampling, generators[row])
        rounds[row].append(Round((), 0, first, TokenOrigin.TARGET, ((first, TokenOrigin.TARGET),), verify_s=watch.totals["verify"]))
        tokens[row].append(first)
        texts.append(torch.cat([prompts[row], prompts[row].new_tensor([first])]))
        kept_rows = min(capabilities.prompt_rows, prompts[row].numel())
        seen[row] = Verified(prompts[row], logits[row, -kept_rows:], None, _rows_of(hidden, row, prompts[row].numel()), None,
                             (), (), first, texts[row], watch.totals["verify"])
        if on_round is not None:
            on_round(row, rounds[row][0])
    passes = [1 for _ in rows]
    with watch.measure("draft"):
        drafter.observe(seen)
    active = [row for row in rows if not _done(tokens[row], max_new_tokens, stop_ids)]
    cache.compact(active)
    drafter.finish(active)

    while active:                                                                     # rounds
        spent = watch.totals["draft"], watch.totals["verify"]
        limits = {}
        for row in active:
            room = max_new_tokens - len(tokens[row]) - 1                              # never overshoot
            limits[row] = room if schedules[row] is None else min(schedules[row].next_gamma(), room)
        requests = {row: DraftRequest(texts[row], limits[row], sampling, generators[row],
                                      schedules[row].keep_drafting if stop_rule else None) for row in active if limits[row] > 0}
        with watch.measure("draft"):                                                  # a. every row proposes
            proposed = drafter.draft(requests) if requests else {}
            proposals = {row: _proposal(proposed, requests, row, texts[row], bool(rounds[row][-1].tree), drafter.name)
                         for row in active}
        layouts = {row: pass_rows(texts[row][-1:], proposals[row]) for row in active}  # (rows, attend, offsets, n)
        with watch.measure("verify"):                                                 # b. one target pass, ragged
            logits, hidden = cache.feed([layouts[row][0] for row in cache.rows], keep=max(lay[0].numel() for lay in layouts.values()),
                                        attend=[layouts[row][1] for row in cache.rows], offsets=[layouts[row][2] for row in cache.rows],
                                        hidden=capabilities.hidden_states)
        verify_s = watch.totals["verify"] - spent[1]
        seen = {}
        for i, row in enumerate(cache.rows):                                          # c. the rule, d. the cache, row by row
            pass_tokens, _, _, n = layouts[row]
            row_logits = logits[i, logits.shape[1] - pass_tokens.numel():]            # [R, V]: the row's own rows
            proposal = proposals[row]
            round_, path, tested, next_token = judge(proposal, row_logits[:n], sampling, generators[row], stop_ids, drafter.name)
            cache.keep(row, kept_columns(texts[row].numel() - 1, path))
            after = text_after(texts[row], proposal, path, next_token)
            extra = row_logits[n:] if proposal.extra is not None else None
            seen[row] = Verified(pass_tokens, row_logits[:n], extra, _rows_of(hidden, i, pass_tokens.numel()), proposal, path, tested,
                                 next_token, after, verify_s)
            if schedules[row] is not None and proposal.tokens.numel():
                schedules[row].update(proposal.tokens.numel(), len(path))
            passes[row] += 1
            texts[row] = after
            rounds[row].append(round_)
            tokens[row] += [token for token, _ in round_.emitted]
        with watch.measure("draft"):                                                  # e. what the target computed
            drafter.observe(seen)
        draft_s = watch.totals["draft"] - spent[0]
        for row in active:
            rounds[row][-1] = replace(rounds[row][-1], draft_s=draft_s, verify_s=verify_s)
            if on_round is not None:
                on_round(row, rounds[row][-1])
        active = [row for row in active if not _done(tokens[row], max_new_tokens, stop_ids)]
        cache.compact(active)                                                         # rows that are done leave the batch
        drafter.finish(active)

    wall_time = watch.elapsed()
    description = describe(drafter, template)
    return [GenerationResult(tokens=tokens[row], stats=run_stats(rounds[row], passes[row], drafter.passes_of(row), wall_time, watch,
                                                                 prompts[row].numel()),
                             rounds=tuple(rounds[row]), drafting=description) for row in rows]


def autoregressive_generate_batch(
    model: PreTrainedModel,
    prompts: Sequence[torch.Tensor],
    *,
    max_new_tokens: int = 64,
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    seed: int | None = None,
    eos_token_id: int | list[int] | None = None,
    on_token: Callable[[int, int], None] | None = None,
) -> list[GenerationResult]:
    """`autoregressive_generate` for several prompts at once: one pass per token for every row still generating.

    Row b samples from its own generator (`seed + b`); `on_token(row, token)` is called with every new token.
    """
    check_batchable(model)
    decoding = Decoding(max_new_tokens, temperature, top_k, top_p, seed)
    sampling, stop_ids, rows = decoding.sampling, eos_ids(eos_token_id), range(len(prompts))
    prompts = [prompt.to(model.device) for prompt in prompts]
    for prompt in prompts:
        check_fits_context(model, prompt.numel(), max_new_tokens)
    generators = [make_generator(None if seed is None else seed + row, model.device) for row in rows]
    watch = Stopwatch(model.device)
    cache = BatchCache(model, len(prompts))
    tokens: list[list[int]] = [[] for _ in rows]
    passes = [0 for _ in rows]
    pending = list(prompts)                                                           # per row in cache order: tokens not yet cached
    while cache.rows:
        with watch.measure("verify"):
            logits, _ = cache.feed(pending, keep=1)                                   # [B, 1, V]
        for i, row in enumerate(cache.rows):
            token, _ = choose_next(logits[i, -1], sampling, generators[row])
            tokens[row].append(token)
            passes[row] += 1
            if on_token is not None:
                on_token(row, token)
        active = [row for row in cache.rows if not _done(tokens[row], max_new_tokens, stop_ids)]
        cache.compact(active)
        pending = [prompts[row].new_tensor([tokens[row][-1]]) for row in active]
    wall_time = watch.elapsed()
    return [GenerationResult(tokens=tokens[row], stats=GenerationStats(
        new_tokens=len(tokens[row]), drafted=0, accepted=0, target_passes=passes[row], draft_passes=0, wall_time_s=wall_time,
        draft_time_s=0.0, verify_time_s=watch.totals["verify"], prompt_tokens=prompts[row].numel())) for row in rows]


def batch_throughput(results: Sequence[GenerationResult]) -> float:
    """All new tokens of a batch over its wall time, tokens per second (every row of a batch shares one wall time)."""
    wall = max(result.stats.wall_time_s for result in results)
    return sum(result.stats.new_tokens for result in results) / wall if wall > 0 else float("nan")


def _proposal(proposed: dict, requests: dict, row: int, text: torch.Tensor, tree_kind: bool, name: str) -> Proposal:
    """Row `row`'s proposal, checked against its limit; an empty one where the row had no room to draft."""
    if row not in requests:
        return propose(None, None, text, tree_kind)
    check_proposal(proposed[row], requests[row].limit, name)
    return proposed[row]


def _rows_of(hidden: tuple[torch.Tensor, ...] | None, row: int, count: int) -> tuple[torch.Tensor, ...] | None:
    """One row's hidden states per layer [count, H] from a batched pass's [B, M, H] (its rows are the last `count`)."""
    return None if hidden is None else tuple(layer[row, layer.shape[1] - count:] for layer in hidden)


def _done(tokens: list[int], max_new_tokens: int, stop_ids: frozenset[int]) -> bool:
    return len(tokens) >= max_new_tokens or tokens[-1] in stop_ids
