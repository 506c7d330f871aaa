"""`speculative_generate`: the target p writes, a draft q guesses ahead, and the output is exactly p's.

Notation: p is the target, q the draft, gamma the drafted tokens per round, alpha the chance a tested
draft is accepted.
This is the front door: it checks the arguments, asks the policy once what to draft with
(`specdec.generation.policy`), and runs the loop (`specdec.engine.loop`) through `run_plan`. One prompt
is a batch of one; a batch of prompts runs the same loop, every row exact on its own.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from specdec.engine.inputs import Decoding, prompts_of
from specdec.engine.results import GenerationResult, Round
from specdec.engine.schedule import GammaSchedule
from specdec.generation.policy import plan_drafting, plan_for_draft_model
from specdec.generation.run import run_plan
from specdec.runtime import as_model, is_model


def speculative_generate(
    target: object,
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

    `target` is a causal LM: a transformers model, or a model on another runtime (`specdec.load_model(...,
    runtime="llama.cpp")`). `draft` is a causal LM sharing the target's tokenizer, or any drafter (`specdec.drafting`): a
    `ModelDrafter`, a `TreeDrafter`, a draft with its own tokenizer (`CrossTokenizerDrafter(model,
    draft_tokenizer, target_tokenizer)`), the model-free `PromptLookupDrafter()`, `TokenRecyclingDrafter()`,
    `LookaheadDrafter()`, `SuffixDrafter()`, or the target skipping its own layers (`LayerSkipDrafter(target)`).
    `input_ids` is [T] or [1, T]. temperature 0 is greedy; top-k and top-p are applied to both p and q.
    Generation stops after `eos_token_id` (included in the output). The same `seed` gives the same
    tokens. `gamma` is a fixed number of drafted tokens per round, a `GammaSchedule` (such as
    `AdaptiveGamma`) that picks each round's gamma, or None (the default): the policy's choice
    (`specdec.generation.policy`): a draft model drafts what `default_drafter` picks (a chain with the stop
    rule, or a token tree where a draft pass is dear and a verified token cheap), a chain drafter that
    reports no confidence 4 tokens a round, and drafters that size their own rounds do so (they refuse
    a gamma). `on_round`, if given, is called with every `Round` as soon as it is decided (the prompt
    pass first), for showing text as it is generated.

    A batch (a list of prompts of any lengths, or a padded [B, T] tensor with its `attention_mask`) returns
    one result per row, each row exact on its own; `on_round` is then called with (row, round). Row b draws
    its random numbers from a stream of its own (`numpy.random.SeedSequence([seed, b])`), so rows are
    independent and no two seeds share a row's stream; a single prompt is row 0.
    """
    decoding = Decoding(max_new_tokens, temperature, top_k, top_p, seed)
    prompts, batched = prompts_of(input_ids, attention_mask)
    target = as_model(target)
    if is_model(draft):                                                             # a draft model: the policy's default for it
        plan = plan_for_draft_model(target, as_model(draft), gamma, rows=len(prompts))
    else:                                                                           # a drafter, as it is (else one clear line)
        plan = plan_drafting(target, draft, gamma, rows=len(prompts))
    callback = on_round if batched or on_round is None else (lambda row, round_: on_round(round_))
    results = run_plan(target, plan, prompts, decoding, eos_token_id, callback)
    return results if batched else results[0]
