"""Speculative decoding with KV caches: draft, verify the drafts in one target pass, repeat.

Notation: p is the target, q the draft, gamma the number of drafted tokens per round, alpha the
acceptance rate. The loop (Leviathan et al. 2023, Algorithm 1; Chen et al. 2023, Algorithm 2):

    0. plan: which drafter, which gamma schedule, the costs c and s (`specdec.generation.policy`, once)
    1. prompt pass: the target reads the prompt and samples the first new token from p
    2. round, while tokens are still wanted:
       a. the drafter proposes a chain x_1..x_k (k <= gamma, fewer near max_new_tokens) or a token
          tree (`specdec.engine.trees`), each token drawn from q or a fixed candidate (a point mass)
       b. ONE target pass over [last token, the proposal, any extra rows of the drafter's] gives p
          after every proposed token (a tree gets a tree attention mask)
       c. the accept/reject rule keeps the longest acceptable prefix (a chain: `specdec.engine.verification`;
          a tree: a walk down it, `specdec.engine.tree_verification`) and adds one token from the target:
          resampled after a rejection, a bonus token after a full accept
       d. the target's cache keeps the accepted text (rolled back, or the accepted path moved up
          behind the text); nothing is recomputed
       e. the drafter observes the pass (`observe`: the target's logits for every row, what was kept)

The drafter is any object that speaks the contract of `specdec.engine.contract` (begin, draft,
observe); the loop never asks which method it is, only what the drafter declared it can do.

Cache invariant after every round: the target's cache holds every token of the text but the
last (whose keys and values the next round's pass computes). Each drafter keeps its own state
(a draft model's cache holds a prefix of the text, caught up in its next pass).

The output has exactly the target's distribution, and with temperature 0 exactly the target's
greedy tokens. A batch of texts runs the same rounds row by row around shared passes (`specdec.generation.batched`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import torch
from transformers import PreTrainedModel

from specdec.engine.contract import Draft, DraftRequest, Generation, Proposal, Verified, check_proposal
from specdec.generation.policy import DraftingPlan, default_drafter, plan_drafting, trees_pay  # noqa: F401  (public names)
from specdec.errors import SpecdecError
from specdec.engine.inputs import Decoding, as_batch, check_counts, start_generation
from specdec.engine.kv_cache import CachedModel
from specdec.engine.results import DraftedToken, GenerationResult, GenerationStats, Round, TokenOrigin, TreeTrace
from specdec.engine.sampling import SamplingConfig, choose_next, probabilities
from specdec.engine.schedule import GammaSchedule
from specdec.engine.stop_rule import ConfidenceStop
from specdec.engine.timing import Stopwatch
from specdec.engine.tree_verification import TreeVerdict, verify_tree_greedy, verify_tree_sampled
from specdec.engine.trees import DraftTree, chain_parents, pass_attention
from specdec.engine.verification import Verdict, verify_greedy, verify_sampled


def speculative_generate(
    target: PreTrainedModel,
    draft: object,
    input_ids: torch.Tensor,
    *,
    gamma: int | GammaSchedule | None = None,
    max_new_tokens: int = 64,
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    seed: int | None = None,
    eos_token_id: int | list[int] | None = None,
    on_round: Callable[[Round], None] | None = None,
    attention_mask: torch.Tensor | None = None,
) -> GenerationResult | list[GenerationResult]:
    """Generate up to `max_new_tokens` tokens after `input_ids` with the target p, drafted by q.

    `draft` is a causal LM sharing the target's tokenizer, or any drafter (`specdec.drafting`): a
    `ModelDrafter`, a `TreeDrafter`, a draft with its own tokenizer (`CrossTokenizerDrafter(model,
    draft_tokenizer, target_tokenizer)`), the model-free `PromptLookupDrafter()`, `TokenRecyclingDrafter()`,
    `LookaheadDrafter()`, `SuffixDrafter()`, or the target skipping its own layers (`LayerSkipDrafter(target)`);
    or a `DraftingPlan` made beforehand. `input_ids` is [T] or [1, T]. temperature 0 is greedy; top-k
    and top-p are applied to both p and q. Generation stops after `eos_token_id` (included in the output).
    The same `seed` gives the same tokens. `gamma` is a fixed number of drafted tokens per round, a
    `GammaSchedule` (such as `AdaptiveGamma`) that picks each round's gamma, or None (the default): the
    policy's choice (`specdec.generation.policy`): a draft model drafts what `default_drafter` picks (a chain
    with the stop rule, or a token tree where a draft pass is dear and a verified token cheap), a chain
    drafter that reports no confidence 4 tokens a round, and drafters that size their own rounds do so
    (they refuse a gamma). `on_round`, if given, is called with every `Round` as soon as it is decided
    (the prompt pass first), for showing text as it is generated.

    A batch (a list of prompts of any lengths, or a padded [B, T] tensor with its `attention_mask`) returns
    one result per row, each row exact on its own (`specdec.generation.batched`); `on_round` is then called with
    (row, round).
    """
    batch = as_batch(input_ids, attention_mask)
    if batch is not None:
        from specdec.generation.batched import speculative_generate_batch

        return speculative_generate_batch(target, draft, batch, gamma=gamma, max_new_tokens=max_new_tokens, temperature=temperature,
                                          top_k=top_k, top_p=top_p, seed=seed, eos_token_id=eos_token_id, on_round=on_round)
    check_counts(max_new_tokens, None if gamma is None or isinstance(gamma, GammaSchedule) else gamma)
    if isinstance(draft, DraftingPlan):
        if gamma is not None:
            raise SpecdecError("a DraftingPlan carries its own schedule: leave gamma out")
        plan = draft
    else:
        plan = plan_drafting(target, draft, gamma)
    drafter, schedule, capabilities = plan.drafter, plan.schedule, plan.drafter.capabilities
    stop_rule = schedule.keep_drafting if isinstance(schedule, ConfidenceStop) and capabilities.reports_confidence else None
    decoding = Decoding(max_new_tokens, temperature, top_k, top_p, seed)
    prompt, sampling, stop_ids, generator, watch = start_generation(target, input_ids, decoding, eos_token_id, "target")  # prompt: [T]
    target_lm = CachedModel(target)
    drafter.begin(Generation(prompt, target, target_lm.vocab_size, max_new_tokens, sampling, plan.costs))   # q must cover p's ids

    with watch.measure("verify"):                                                 # 1. the prompt pass
        logits, hidden = target_lm.feed_with_hidden(prompt, keep=capabilities.prompt_rows, hidden=capabilities.hidden_states)
    first, _ = choose_next(logits[-1], sampling, generator)                       # logits: [rows kept, V]
    rounds = [Round((), 0, first, TokenOrigin.TARGET, ((first, TokenOrigin.TARGET),), verify_s=watch.totals["verify"])]
    if on_round is not None:
        on_round(rounds[0])
    tokens = [first]
    sequence = torch.cat([prompt, prompt.new_tensor([first])])                    # [T + 1]
    drafted_until = watch.totals["draft"]                                         # the first round's draft time includes this:
    with watch.measure("draft"):
        drafter.observe(Verified(prompt, logits, None, hidden, None, (), (), first, sequence, watch.totals["verify"]))

    while len(tokens) < max_new_tokens and tokens[-1] not in stop_ids:           # 2. rounds
        room = max_new_tokens - len(tokens) - 1                                   # never overshoot
        limit = room if schedule is None else min(schedule.next_gamma(), room)
        spent = drafted_until, watch.totals["verify"]
        round_, verified = _round(drafter, target_lm, sequence, limit, sampling, generator, watch, stop_ids, stop_rule,
                                  tree_kind=bool(rounds[-1].tree))
        drafted = verified.proposal.tokens.numel()
        if schedule is not None and drafted:
            schedule.update(drafted, len(verified.path))
        with watch.measure("draft"):                                              # e. what the target computed
            drafter.observe(verified)
        round_ = replace(round_, draft_s=watch.totals["draft"] - spent[0], verify_s=watch.totals["verify"] - spent[1])
        drafted_until = watch.totals["draft"]
        rounds.append(round_)
        if on_round is not None:
            on_round(round_)
        new_tokens = [token for token, _ in round_.emitted]
        tokens += new_tokens
        sequence = torch.cat([sequence, sequence.new_tensor(new_tokens)])

    stats = run_stats(rounds, target_lm.passes, drafter.passes, watch.elapsed(), watch, prompt.numel())
    return GenerationResult(tokens=tokens, stats=stats, rounds=tuple(rounds), drafting=plan.description)


def run_stats(rounds: list[Round], target_passes: int, draft_passes: int, wall_time: float, watch: Stopwatch,
              prompt_tokens: int) -> GenerationStats:
    """A speculative run's counts and times, from its rounds (the prompt pass first) and its stopwatch."""
    return GenerationStats(
        new_tokens=sum(len(r.emitted) for r in rounds),
        drafted=sum(len(r.drafted) for r in rounds),
        accepted=sum(r.accepted for r in rounds),
        rejections=sum(1 for r in rounds if r.emitted[-1][1] == TokenOrigin.RESAMPLED),
        target_passes=target_passes,
        draft_passes=draft_passes,
        wall_time_s=wall_time,
        draft_time_s=watch.totals["draft"],
        verify_time_s=watch.totals["verify"],
        prompt_tokens=prompt_tokens,
    )


def _round(drafter, target_lm: CachedModel, sequence: torch.Tensor, limit: int, sampling: SamplingConfig,
           generator: torch.Generator, watch: Stopwatch, stop_ids: frozenset[int],
           stop_rule: Callable[[float], bool] | None, tree_kind: bool = False) -> tuple[Round, Verified]:
    """Steps 2a-2d: propose, one target pass, the rule, the target's cache cut; the round's trace and what the drafter observes.

    With no room left (`limit` 0) the drafter is not asked: the round proposes nothing, as a tree when the
    last round was one (`tree_kind`), and the target adds its one token.
    """
    with watch.measure("draft"):                                                  # a. propose
        request = DraftRequest(sequence, limit, sampling, generator, stop_rule) if limit > 0 else None
        proposal = propose(drafter, request, sequence, tree_kind)
    before = watch.totals["verify"]
    with watch.measure("verify"):                                                 # b. one target pass
        rows, logits, extra_logits, hidden = _target_pass(target_lm, sequence, proposal, drafter.capabilities.hidden_states)
    round_, path, tested, next_token = judge(proposal, logits, sampling, generator, stop_ids, drafter.name)   # c. the rule
    text = sequence.numel() - 1                                                   # cached in the target: all but the root
    target_lm.keep(kept_columns(text, path))                                      # d. the cache (extra rows are cut with the rest)
    verified = Verified(rows, logits, extra_logits, hidden, proposal, path, tested, next_token,
                        text_after(sequence, proposal, path, next_token), watch.totals["verify"] - before)
    return round_, verified


def propose(drafter, request: DraftRequest | None, sequence: torch.Tensor, tree_kind: bool = False) -> Proposal:
    """Step 2a: the drafter's proposal for `request`, checked; with no request (no room left) an empty one."""
    if request is None:
        return DraftTree.from_paths([]) if tree_kind else Draft(sequence.new_empty(0), None)
    proposal = drafter.draft(request)
    check_proposal(proposal, request.limit, drafter.name)
    return proposal


def pass_rows(root: torch.Tensor, proposal: Proposal) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None, int]:
    """What one text feeds the verification pass: (rows [R] = root, nodes, extra rows; attend [R, R] among them or None
    for causal; offsets [R] after the text or None; n = 1 + nodes, the rows the rule reads)."""
    nodes = proposal.tokens.to(root.device)                                       # [N]
    parents = chain_parents(nodes.numel()) if isinstance(proposal, Draft) else proposal.parents
    extra = proposal.extra
    rows = torch.cat([root, nodes] + ([extra.tokens.to(root.device)] if extra is not None else []))   # [1 + N + E]
    n = nodes.numel() + 1
    if extra is None and parents == chain_parents(n - 1):                          # a chain needs no mask: a causal pass
        return rows, None, None, n
    attend, offsets = pass_attention(0, parents, extra)                            # [R, R], [R]: no text before the root
    return rows, attend, offsets, n


def _target_pass(target_lm: CachedModel, sequence: torch.Tensor, proposal: Proposal,
                 hidden: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, tuple[torch.Tensor, ...] | None]:
    """One target pass over [root, the proposal's tokens, its extra rows]: (rows, logits [1 + N, V], extra logits [E, V], hidden)."""
    rows, attend, offsets, n = pass_rows(sequence[-1:], proposal)
    if attend is None:
        logits, states = target_lm.feed_with_hidden(rows, keep=n, hidden=hidden)
    else:
        text = sequence.numel() - 1
        full = torch.cat([torch.ones(rows.numel(), text, dtype=torch.bool), attend], dim=1)   # [R, text + R]
        logits, states = target_lm.feed_with_hidden(rows, keep=rows.numel(), attend=full, positions=text + offsets, hidden=hidden)
    return rows, logits[:n], (logits[n:] if proposal.extra is not None else None), states


def judge(proposal: Proposal, logits: torch.Tensor, sampling: SamplingConfig, generator: torch.Generator | None,
          stop_ids: frozenset[int], drafter_name: str = "the drafter") -> tuple[Round, tuple[int, ...], tuple[bool | None, ...], int]:
    """Step 2c: the accept/reject rule on the target's logits [1 + N, V].

    Returns the round's trace, the accepted nodes, each node's outcome (True accepted, False rejected,
    None not tested) and the target's next token.
    """
    if isinstance(proposal, Draft):
        verdict = _verify(logits, proposal, sampling, generator, drafter_name)
        k = proposal.tokens.numel()
        tested = tuple(True if i < verdict.accepted else (False if i == verdict.accepted else None) for i in range(k))
        return _record_round(proposal, verdict, stop_ids), tuple(range(verdict.accepted)), tested, verdict.next_token
    if sampling.greedy:
        verdict = verify_tree_greedy(logits, proposal)
    else:
        verdict = verify_tree_sampled(probabilities(logits, sampling), proposal, generator)
    return _record_tree_round(proposal, verdict, stop_ids), verdict.path, verdict.tested, verdict.next_token


def kept_columns(text: int, path: tuple[int, ...]) -> list[int]:
    """Step 2d: the cached tokens a text keeps after a pass: its `text` tokens, the root and the accepted nodes.

    >>> kept_columns(3, (0, 1)), kept_columns(3, (1,))          # a chain's two accepted tokens; a tree's second node
    ([0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 5])
    """
    return list(range(text + 1)) + [text + 1 + node for node in path]


def text_after(sequence: torch.Tensor, proposal: Proposal, path: tuple[int, ...], next_token: int) -> torch.Tensor:
    """The text after a round, the target's next token last: [n + accepted + 1]."""
    accepted = proposal.tokens[list(path)].tolist()
    return torch.cat([sequence, sequence.new_tensor(accepted + [next_token])])


def _verify(logits: torch.Tensor, draft: Draft, sampling: SamplingConfig, generator: torch.Generator,
            drafter_name: str = "the drafter") -> Verdict:
    """The accept/reject rule on a chain, from the target's logits [k + 1, V] after the root and each drafted token."""
    k = draft.tokens.numel()
    if sampling.greedy:
        return verify_greedy(logits, draft.tokens.to(logits.device))
    p = probabilities(logits, sampling)                                                  # [k+1, V]
    q = draft.q if draft.q is not None else p.new_empty(0, p.shape[-1])                  # [k, V]
    if q.shape != (k, p.shape[-1]):
        raise SpecdecError(f"{drafter_name} proposed {k} tokens with q of shape {tuple(q.shape)} while sampling; the rule needs "
                           f"q of shape [{k}, {p.shape[-1]}]: return the distribution each token was drawn from (or propose "
                           "fixed candidates as a specdec.DraftTree with q=None)")
    return verify_sampled(p, q, draft.tokens.to(p.device), generator)


def _record_round(draft: Draft, verdict: Verdict, stop_ids: frozenset[int]) -> Round:
    """The trace of one round, cut after the first end-of-sequence token.

    Drafted tokens after an accepted end-of-sequence token never reach the output: they count as
    drafted but not as accepted (their `accepted` is None, as for tokens after a rejection).
    """
    drafted_list = draft.tokens.tolist()
    if not drafted_list:
        next_origin = TokenOrigin.TARGET
    else:
        next_origin = TokenOrigin.BONUS if verdict.full_accept else TokenOrigin.RESAMPLED
    emitted = [(token, TokenOrigin.ACCEPTED) for token in drafted_list[:verdict.accepted]]
    emitted.append((verdict.next_token, next_origin))
    emitted = _cut_at_stop(emitted, stop_ids)
    kept = sum(1 for _, origin in emitted if origin == TokenOrigin.ACCEPTED)       # accepted tokens in the output
    drafted = tuple(
        DraftedToken(
            token=token,
            p=verdict.target_probs[i],
            q=verdict.draft_probs[i],
            u=verdict.uniforms[i],
            accepted=None if i > verdict.accepted or i >= len(emitted) else i < verdict.accepted,
        )
        for i, token in enumerate(drafted_list)
    )
    return Round(drafted, kept, verdict.next_token, next_origin, tuple(emitted))


def _record_tree_round(tree: DraftTree, verdict: TreeVerdict, stop_ids: frozenset[int]) -> Round:
    """The trace of one tree round: every node as drafted, the accepted path, cut after the first end-of-sequence token."""
    path_tokens = tree.tokens[list(verdict.path)].tolist()
    next_origin = TokenOrigin.BONUS if verdict.full_accept else TokenOrigin.RESAMPLED
    if not tree.size:
        next_origin = TokenOrigin.TARGET
    emitted = _cut_at_stop([(token, TokenOrigin.ACCEPTED) for token in path_tokens] + [(verdict.next_token, next_origin)], stop_ids)
    kept = sum(1 for _, origin in emitted if origin == TokenOrigin.ACCEPTED)
    in_output = set(verdict.path[:kept])
    drafted = tuple(
        DraftedToken(
            token=token,
            p=verdict.target_probs[node],
            q=verdict.draft_probs[node],
            u=verdict.uniforms[node],
            accepted=True if node in in_output else (False if verdict.tested[node] is False else None),
        )
        for node, token in enumerate(tree.tokens.tolist())
    )
    return Round(drafted, kept, verdict.next_token, next_origin, tuple(emitted), tree=TreeTrace(tree.parents, verdict.path[:kept]))


def _cut_at_stop(emitted: list[tuple[int, TokenOrigin]], stop_ids: frozenset[int]) -> list[tuple[int, TokenOrigin]]:
    """The round's output up to and including its first end-of-sequence token."""
    for i, (token, _) in enumerate(emitted):
        if token in stop_ids:
            return emitted[:i + 1]
    return emitted
