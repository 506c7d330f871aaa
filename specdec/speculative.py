"""Speculative decoding with KV caches: draft gamma tokens, verify them in one target pass, repeat.

Notation: p is the target, q the draft, gamma the number of drafted tokens per round, alpha the
acceptance rate. The loop (Leviathan et al. 2023, Algorithm 1; Chen et al. 2023, Algorithm 2):

    1. prompt pass: the target reads the prompt and samples the first new token from p
    2. round, while tokens are still wanted:
       a. the drafter proposes x_1..x_k (k = gamma, fewer near max_new_tokens) drawn from q
       b. ONE target pass over [last token, x_1..x_k] gives p at the k + 1 positions
       c. the accept/reject rule (`specdec.verification`) keeps x_1..x_n and adds one token
          from the target: resampled after a rejection, a bonus token after a full accept
       d. both KV caches are rolled back to the accepted text; nothing is recomputed

Cache invariant after every round: the target's cache holds every token of the text but the
last (whose keys and values the next round's pass computes); the draft's cache holds a prefix of
the text, at most one token shorter than the target's after a full accept, caught up in the first
draft pass of the next round.

The output has exactly the target's distribution, and with temperature 0 exactly the target's
greedy tokens. gamma may change from round to round (`specdec.schedule`). A `TreeDrafter` drafts a
token tree instead of a chain (`specdec.trees`): step b becomes one pass over the whole tree with a
tree attention mask, step c a walk down the tree (`specdec.tree_verification`), and step d keeps
the accepted path's keys and values in both caches. Not handled: batches.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import torch
from transformers import PreTrainedModel

from specdec.costs import verify_slope_guess, weight_cost_ratio
from specdec.drafters import Draft, Drafter, ModelDrafter
from specdec.errors import SpecdecError
from specdec.inputs import Decoding, check_counts, check_fits_context, start_generation
from specdec.kv_cache import CachedModel, has_sliding_window
from specdec.results import DraftedToken, GenerationResult, GenerationStats, Round, TokenOrigin, TreeTrace
from specdec.sampling import SamplingConfig, choose_next, probabilities
from specdec.schedule import FixedGamma, GammaSchedule
from specdec.stop_rule import ConfidenceStop
from specdec.timing import Stopwatch
from specdec.tree_drafter import TreeDrafter
from specdec.tree_verification import TreeVerdict, verify_tree_greedy, verify_tree_sampled
from specdec.trees import DraftTree, tree_attention
from specdec.verification import Verdict, verify_greedy, verify_sampled


def speculative_generate(
    target: PreTrainedModel,
    draft: PreTrainedModel | Drafter,
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
) -> GenerationResult:
    """Generate up to `max_new_tokens` tokens after `input_ids` with the target p, drafted by q.

    `draft` is a causal LM sharing the target's tokenizer, a draft with its own tokenizer
    (`CrossTokenizerDrafter(model, draft_tokenizer, target_tokenizer)`), a `TreeDrafter`, or a
    model-free `Drafter` such as `PromptLookupDrafter()`. `input_ids` is [T] or [1, T]. temperature 0 is greedy; top-k and
    top-p are applied to both p and q. Generation stops after `eos_token_id` (included in the
    output). The same `seed` gives the same tokens. `gamma` is a fixed number of drafted tokens per
    round, a `GammaSchedule` (such as `AdaptiveGamma`) that picks each round's gamma, or None (the
    default): a draft model drafts while another token is worth its cost (`ConfidenceStop`), a
    model-free drafter 4 tokens a round. `on_round`, if given, is called with every
    `Round` as soon as it is decided (the prompt pass first), for showing text as it is generated.
    A draft model with gamma left out drafts what `default_drafter` picks: a chain with the stop
    rule, or a token tree where a draft pass is dear and a verified token cheap.
    """
    check_counts(max_new_tokens, None if gamma is None or isinstance(gamma, GammaSchedule) else gamma)
    if isinstance(draft, PreTrainedModel):
        drafter = default_drafter(target, draft) if gamma is None else ModelDrafter(draft)
    else:
        drafter = draft
    if not isinstance(drafter, (Drafter, TreeDrafter)):
        raise SpecdecError(f"draft must be a transformers causal LM, a Drafter or a TreeDrafter, got {type(draft).__name__}")
    if isinstance(drafter, TreeDrafter) and gamma is not None:
        raise SpecdecError("a TreeDrafter sizes its own rounds: set its budget and depth, and leave gamma out")
    if isinstance(drafter, TreeDrafter) and (has_sliding_window(target) or has_sliding_window(drafter.model)):
        raise SpecdecError("token trees need full-attention caches and this pair has sliding-window layers: draft a chain instead")
    schedule = _schedule(gamma, drafter, target)
    if isinstance(drafter, TreeDrafter):
        drafter.price(weight_cost_ratio(target, drafter.model), verify_slope_guess(target))
    stop_rule = schedule.keep_drafting if isinstance(schedule, ConfidenceStop) and getattr(drafter, "reports_confidence", False) else None
    decoding = Decoding(max_new_tokens, temperature, top_k, top_p, seed)
    prompt, sampling, stop_ids, generator, watch = start_generation(target, input_ids, decoding, eos_token_id, "target")  # prompt: [T]
    draft_model = getattr(drafter, "model", None)
    if isinstance(draft_model, PreTrainedModel) and draft_model.device != target.device:
        raise SpecdecError(f"the draft is on {draft_model.device} but the target on {target.device}: load both on one device")
    if isinstance(drafter, (ModelDrafter, TreeDrafter)):                         # (same tokenizer: the same count of tokens)
        check_fits_context(drafter.model, prompt.numel(), max_new_tokens, "draft")
    target_lm = CachedModel(target)
    drafter.start(prompt, target_lm.vocab_size)                                   # q must cover p's ids

    with watch.measure("verify"):                                                 # 1. the prompt pass
        logits = target_lm.feed(prompt, keep=1)                                   # [1, V_target]
    first, _ = choose_next(logits[0], sampling, generator)
    rounds = [Round((), 0, first, TokenOrigin.TARGET, ((first, TokenOrigin.TARGET),), verify_s=watch.totals["verify"])]
    if on_round is not None:
        on_round(rounds[0])
    tokens = [first]
    sequence = torch.cat([prompt, prompt.new_tensor([first])])                    # [T + 1]

    while len(tokens) < max_new_tokens and tokens[-1] not in stop_ids:           # 2. rounds
        room = max_new_tokens - len(tokens) - 1                                   # never overshoot
        spent = watch.totals["draft"], watch.totals["verify"]
        if isinstance(drafter, TreeDrafter):
            round_ = _tree_round(drafter, target_lm, sequence, room, sampling, generator, watch, stop_ids)
        else:
            round_ = _chain_round(drafter, target_lm, sequence, min(schedule.next_gamma(), room), sampling, generator,
                                  watch, stop_ids, schedule, stop_rule)
        round_ = replace(round_, draft_s=watch.totals["draft"] - spent[0], verify_s=watch.totals["verify"] - spent[1])
        rounds.append(round_)
        if on_round is not None:
            on_round(round_)
        new_tokens = [token for token, _ in round_.emitted]
        tokens += new_tokens
        sequence = torch.cat([sequence, sequence.new_tensor(new_tokens)])

    wall_time = watch.elapsed()
    stats = GenerationStats(
        new_tokens=len(tokens),
        drafted=sum(len(r.drafted) for r in rounds),
        accepted=sum(r.accepted for r in rounds),
        rejections=sum(1 for r in rounds if r.emitted[-1][1] == TokenOrigin.RESAMPLED),
        target_passes=target_lm.passes,
        draft_passes=drafter.passes,
        wall_time_s=wall_time,
        draft_time_s=watch.totals["draft"],
        verify_time_s=watch.totals["verify"],
        prompt_tokens=prompt.numel(),
    )
    return GenerationResult(tokens=tokens, stats=stats, rounds=tuple(rounds))


TREE_FROM_C = 0.25            # the default drafts a tree when a draft step costs at least this share of a target step ...
TREE_UP_TO_SLOPE = 0.1        # ... and one more token in a verification pass at most this share (v(k) = 1 + s k)


def default_drafter(target: PreTrainedModel, draft: PreTrainedModel, name: str | None = None) -> ModelDrafter | TreeDrafter:
    """What a draft model drafts by default: a `TreeDrafter` where trees pay, else a chain with the stop rule.

    A tree level costs one draft pass for all its nodes, and each node costs s more in the target's
    pass. So a tree pays where a draft step is dear (c, estimated from the weights) and a node cheap
    (s): on this project's CPU with Qwen2.5-Coder 0.5B for 1.5B in bfloat16 (c 0.32 from the weights,
    0.34 measured; s about 0.04) the tree beat the chain's stop rule, 1.51x vs 1.35x (README,
    Benchmark); with the int8 draft (c 0.16 from the weights) it lost to the chain on six prompts
    (2.11x vs 2.32x), though it won in an earlier run. In float32 on a CPU (s = 0.5) the tree's own
    cost rule keeps it near a chain anyway.
    Sliding-window models always draft chains (a tree needs every cached position).

    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> tiny = LlamaForCausalLM(LlamaConfig(hidden_size=8, intermediate_size=8, num_hidden_layers=1, num_attention_heads=1, vocab_size=4))
    >>> type(default_drafter(tiny, tiny)).__name__                  # c = 1, but float32 on a CPU: s = 0.5
    'ModelDrafter'
    >>> type(default_drafter(tiny.to(torch.bfloat16), tiny.to(torch.bfloat16))).__name__
    'TreeDrafter'
    """
    return TreeDrafter(draft, name) if trees_pay(target, draft) else ModelDrafter(draft, name)


def trees_pay(target: PreTrainedModel, draft: PreTrainedModel) -> bool:
    """Whether `default_drafter` drafts a tree for this pair: c >= TREE_FROM_C, s <= TREE_UP_TO_SLOPE, no sliding window."""
    dear = weight_cost_ratio(target, draft) >= TREE_FROM_C and verify_slope_guess(target) <= TREE_UP_TO_SLOPE
    return dear and not has_sliding_window(target) and not has_sliding_window(draft)


def _schedule(gamma: int | GammaSchedule | None, drafter: Drafter, target: PreTrainedModel) -> GammaSchedule:
    """The gamma schedule asked for; None is the default: the stop rule when the drafter reports its confidence."""
    if gamma is not None:
        return gamma if isinstance(gamma, GammaSchedule) else FixedGamma(gamma)
    if not getattr(drafter, "reports_confidence", False):
        return FixedGamma(ConfidenceStop.fallback_gamma)
    draft_model = getattr(drafter, "model", None)
    return ConfidenceStop(c=weight_cost_ratio(target, draft_model), verify_slope=verify_slope_guess(target))


def _chain_round(drafter: Drafter, target_lm: CachedModel, sequence: torch.Tensor, gamma: int, sampling: SamplingConfig,
                 generator: torch.Generator, watch: Stopwatch, stop_ids: frozenset[int], schedule: GammaSchedule,
                 stop_rule: Callable[[float], bool] | None) -> Round:
    """Steps 2a-2d with a chain of at most `gamma` drafted tokens."""
    with watch.measure("draft"):
        draft_block = _propose(drafter, sequence, gamma, sampling, generator, stop_rule)
    verdict = _verify(target_lm, sequence, draft_block, sampling, generator, watch, drafter.name)
    kept = sequence.numel() + verdict.accepted                                    # text whose KV stays valid
    target_lm.rollback(kept)
    drafter.rollback(kept)
    if draft_block.tokens.numel():
        schedule.update(draft_block.tokens.numel(), verdict.accepted)
    return _record_round(draft_block, verdict, stop_ids)


def _tree_round(drafter: TreeDrafter, target_lm: CachedModel, sequence: torch.Tensor, max_depth: int, sampling: SamplingConfig,
                generator: torch.Generator, watch: Stopwatch, stop_ids: frozenset[int]) -> Round:
    """Steps 2a-2d with a token tree: one target pass over [root, every node], then walk down the tree."""
    with watch.measure("draft"):
        tree = drafter.propose_tree(sequence, max_depth, sampling, generator)
    text = sequence.numel() - 1                                                   # cached in the target: all but the root
    inputs = torch.cat([sequence[-1:], tree.tokens])                              # [N + 1]
    with watch.measure("verify"):
        if tree.is_chain:                                                         # (a chain needs no tree mask)
            logits = target_lm.feed(inputs, keep=tree.size + 1)                   # [N + 1, V]
        else:
            attend, positions = tree_attention(text, tree)
            logits = target_lm.feed(inputs, keep=tree.size + 1, attend=attend, positions=positions)
    if sampling.greedy:
        verdict = verify_tree_greedy(logits, tree)
    else:
        verdict = verify_tree_sampled(probabilities(logits, sampling), tree, generator)
    target_lm.keep(list(range(text + 1)) + [text + 1 + node for node in verdict.path])
    drafter.keep_path(verdict.path, verdict.tested)
    return _record_tree_round(tree, verdict, stop_ids)


def _propose(drafter: Drafter, sequence: torch.Tensor, gamma: int, sampling: SamplingConfig, generator: torch.Generator,
             keep_drafting: Callable[[float], bool] | None) -> Draft:
    """The drafter's proposal of at most `gamma` tokens (none when gamma is 0), with the stop rule when there is one."""
    if gamma == 0:
        return Draft(sequence.new_empty(0), None)
    if keep_drafting is None:
        return drafter.propose(sequence, gamma, sampling, generator)
    return drafter.propose(sequence, gamma, sampling, generator, keep_drafting=keep_drafting)


def _verify(
    target_lm: CachedModel,
    sequence: torch.Tensor,
    draft: Draft,
    sampling: SamplingConfig,
    generator: torch.Generator,
    watch: Stopwatch,
    drafter_name: str = "the drafter",
) -> Verdict:
    """One target pass over [last token, x_1..x_k], then the accept/reject rule."""
    k = draft.tokens.numel()
    with watch.measure("verify"):
        logits = target_lm.feed(torch.cat([sequence[-1:], draft.tokens]), keep=k + 1)  # [k+1, V]
    if sampling.greedy:
        return verify_greedy(logits, draft.tokens)
    p = probabilities(logits, sampling)                                                  # [k+1, V]
    q = draft.q if draft.q is not None else p.new_empty(0, p.shape[-1])                  # [k, V]
    if q.shape != (k, p.shape[-1]):
        raise SpecdecError(f"{drafter_name} proposed {k} tokens with q of shape {tuple(q.shape)} while sampling; the rule needs "
                           f"q of shape [{k}, {p.shape[-1]}]: return the distribution each token was drawn from")
    return verify_sampled(p, q, draft.tokens, generator)


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
