"""Running a plan: prompts in, a result out, with the plan's drafting; the target alone beside it; your own models too.

Notation: p is the target, q the draft, gamma the drafted tokens per round, alpha the chance a tested draft is kept.

    pair = load_spec(spec)                                                    # specdec.pair.loading
    input_ids = encode_prompt(pair.tokenizer, "Write a haiku.", chat=True)    # [1, T]
    # as the planner plans it; result.plan says how
    result = generate(pair, input_ids, spec)
    plain = generate_plain(pair, input_ids, spec.decoding)                    # the target alone

    # models you loaded yourself: the same planner
    speculative_generate(target, draft, input_ids, temperature=0)

Everything a run does was decided by the planner (`specdec.planner`); here it is only run, with the plan's header line
put on each result (`GenerationResult.plan`), so every report says the same.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import torch
from transformers import PreTrainedTokenizerBase

from specdec.engine.inputs import Decoding, prompts_of
from specdec.engine.results import GenerationResult, Round
from specdec.engine.schedule import GammaSchedule
from specdec.errors import SpecdecError
from specdec.generation.autoregressive import autoregressive_generate
from specdec.generation.run import run_plan
from specdec.pair.measuring import recheck_costs
from specdec.pair.resources import LoadedPair
from specdec.planner import Plan
from specdec.planner.drafting import plan_for
from specdec.run_spec import Drafting, RunSpec
from specdec.runtime import as_model


def encode_chat(tokenizer: PreTrainedTokenizerBase, messages: Sequence[tuple[str, str]]) -> torch.Tensor:
    """Token ids [1, T] of (role, content) turns in the tokenizer's chat template, ready for the assistant's reply."""
    turns = [{"role": role, "content": content} for role, content in messages]
    text = tokenizer.apply_chat_template(turns, tokenize=False, add_generation_prompt=True)
    return tokenizer(text, return_tensors="pt", add_special_tokens=False).input_ids  # the template holds the specials


def has_chat_template(tokenizer: PreTrainedTokenizerBase) -> bool:
    return bool(getattr(tokenizer, "chat_template", None))


def encode_prompt(tokenizer: PreTrainedTokenizerBase, prompt: str, chat: bool = False) -> torch.Tensor:
    """Token ids [1, T] for `prompt`, wrapped in the tokenizer's chat template when `chat`."""
    if not prompt.strip():
        raise SpecdecError("the prompt is empty: give some text to continue")
    if not chat:
        return tokenizer(prompt, return_tensors="pt").input_ids
    if not has_chat_template(tokenizer):
        raise SpecdecError(
            "this model's tokenizer has no chat template: run without --chat (chat needs an instruct model)"
        )
    return encode_chat(tokenizer, [("user", prompt)])


def generate(
    pair: LoadedPair,
    input_ids: torch.Tensor,
    spec: RunSpec,
    on_round: Callable[[Round], None] | None = None,
    plan: Plan | None = None,
) -> GenerationResult:
    """One text as `spec` drafts and decodes it: `plan` (the planner's, `pair.plan(spec)`, when not given), run."""
    plan = plan or pair.plan(spec)
    callback = None if on_round is None else (lambda row, round_: on_round(round_))
    return run(pair, plan, [input_ids.reshape(-1)], spec.decoding, callback)[0]


def generate_batch(
    pair: LoadedPair,
    prompts: Sequence[torch.Tensor],
    spec: RunSpec,
    on_round: Callable[[int, Round], None] | None = None,
) -> list[GenerationResult]:
    """Several prompts at once as `spec` drafts and decodes them: a draft model's chains (one draft pass per step for
    all rows), a draft with its own tokenizer (row by row), or a method that needs only the target; one result per
    prompt."""
    plan = pair.plan(spec, rows=len(prompts))
    return run(pair, plan, [prompt.reshape(-1) for prompt in prompts], spec.decoding, on_round)


def generate_speculative(
    pair: LoadedPair,
    input_ids: torch.Tensor,
    decoding: Decoding,
    drafting: Drafting = Drafting(),
    on_round: Callable[[Round], None] | None = None,
) -> GenerationResult:
    """`generate` with the run spec of this pair's names, `drafting` and `decoding` (for callers that hold a pair)."""
    return generate(pair, input_ids, pair.spec(drafting, decoding), on_round)


def generate_speculative_batch(
    pair: LoadedPair,
    prompts: Sequence[torch.Tensor],
    decoding: Decoding,
    drafting: Drafting = Drafting(),
    on_round: Callable[[int, Round], None] | None = None,
) -> list[GenerationResult]:
    """`generate_batch` with the run spec of this pair's names, `drafting` and `decoding`."""
    return generate_batch(pair, prompts, pair.spec(drafting, decoding), on_round)


def run(
    pair: LoadedPair,
    plan: Plan,
    prompts: Sequence[torch.Tensor],
    decoding: Decoding,
    on_round: Callable[[int, Round], None] | None = None,
) -> list[GenerationResult]:
    """`plan` run on the pair's target after each prompt [T]; each result carries the plan's header line."""
    results = run_plan(pair.target, plan.drafting, prompts, decoding, pair.eos_token_ids, on_round)
    if len(results) == 1:  # a batch's passes are priced otherwise: one text checks the costs
        recheck_costs(pair, results[0])
    return [replace(result, plan=plan.header()) for result in results]


def generate_plain_batch(
    pair: LoadedPair, prompts: Sequence[torch.Tensor], decoding: Decoding
) -> list[GenerationResult]:
    """The target alone on several prompts at once, one pass per token for all of them."""
    return autoregressive_generate(pair.target, list(prompts), eos_token_id=pair.eos_token_ids, **decoding.as_kwargs())


def generate_plain(
    pair: LoadedPair, input_ids: torch.Tensor, decoding: Decoding, on_token: Callable[[int], None] | None = None
) -> GenerationResult:
    """The target alone, with the same decoding."""
    return autoregressive_generate(
        pair.target, input_ids, eos_token_id=pair.eos_token_ids, on_token=on_token, **decoding.as_kwargs()
    )


def continued(input_ids: torch.Tensor, tokens: Sequence[int], device: torch.device) -> torch.Tensor:
    """The prompt followed by `tokens`, as one sequence [T + N] on `device`, for a single forward pass.

    >>> continued(torch.tensor([[5, 6]]), [7], torch.device("cpu")).tolist()
    [5, 6, 7]
    """
    return torch.cat([input_ids.reshape(-1).cpu(), torch.tensor(list(tokens), dtype=torch.long)]).to(device)


@torch.inference_mode()
def target_margin(pair: LoadedPair, input_ids: torch.Tensor, tokens: Sequence[int], position: int) -> float:
    """The gap between the target's two best logits for new token `position`, from one pass over the text before it.

    Where greedy speculative and plain decoding part, a tiny gap says the two passes rounded a
    near-tie differently; a large one says something else went wrong (`bench.comparison.greedy_check`).
    """
    context = continued(input_ids, tokens[:position], pair.device)  # [T + position]
    logits, _ = pair.target.rows([0]).feed([context], last=1)  # [1, 1, V]
    best, second = logits[0, -1].float().topk(2).values.tolist()
    return best - second


def speculative_generate(
    target: object,
    draft: object,
    input_ids: torch.Tensor,
    *,
    gamma: int | None = None,
    adaptive: int | None = None,
    schedule: GammaSchedule | None = None,
    max_new_tokens: int = 64,
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    seed: int | None = None,
    eos_token_id: int | list[int] | None = None,
    on_round: Callable[[Round], None] | None = None,
    attention_mask: torch.Tensor | None = None,
) -> GenerationResult | list[GenerationResult]:
    """Generate up to `max_new_tokens` tokens after `input_ids` with the target p, drafted by q: for models you loaded
    yourself.

    `target` is a causal LM: a transformers model, or a model on another runtime (`specdec.load_model(...,
    runtime="llama.cpp")`). `draft` is a causal LM sharing the target's tokenizer, or any drafter (`specdec.drafting`):
    a `ModelDrafter`, a `TreeDrafter`, a draft with its own tokenizer (`CrossTokenizerDrafter(model,
    draft_tokenizer, target_tokenizer)`), the model-free `PromptLookupDrafter()`, `TokenRecyclingDrafter()`,
    `LookaheadDrafter()`, `SuffixDrafter()`, or the target skipping its own layers (`LayerSkipDrafter(target)`).
    `input_ids` is [T] or [1, T]. temperature 0 is greedy; top-k and top-p are applied to both p and q.
    Generation stops after `eos_token_id` (included in the output). The same `seed` gives the same
    tokens. `gamma` is a fixed number of drafted tokens per round, `adaptive` the most an adaptive gamma
    (`AdaptiveGamma`) may draft, `schedule` a `GammaSchedule` of your own that picks each round's gamma (such as
    `AdaptiveGamma(costs)` or `ConfidenceStop(c=0.2)`), or none of them (the default): the planner's choice
    (`specdec.planner.drafting`): a draft model drafts what `default_drafter` picks (a chain with the stop rule, or a
    token tree where a draft pass is dear and a verified token cheap), a chain drafter that reports no confidence 4
    tokens a round, and drafters that size their own rounds do so (they refuse a gamma). `on_round`, if given, is called
    with every `Round` as soon as it is decided (the prompt pass first), for showing text as it is generated.

    A batch (a list of prompts of any lengths, or a padded [B, T] tensor with its `attention_mask`) returns
    one result per row, each row exact on its own; `on_round` is then called with (row, round). Row b draws
    its random numbers from a stream of its own (`numpy.random.SeedSequence([seed, b])`), so rows are
    independent and no two seeds share a row's stream; a single prompt is row 0.
    """
    decoding = Decoding(max_new_tokens, temperature, top_k, top_p, seed)
    prompts, batched = prompts_of(input_ids, attention_mask)
    target = as_model(target)
    # a draft model: the policy's
    plan = plan_for(target, draft, gamma, rows=len(prompts), adaptive=adaptive, schedule=schedule)
    callback = on_round if batched or on_round is None else (lambda row, round_: on_round(round_))
    results = run_plan(target, plan, prompts, decoding, eos_token_id, callback)
    return results if batched else results[0]
