"""What a benchmark can run, one object per method: our engine, each drafting family, transformers' baselines.

Notation: p is the target, q the draft, gamma the drafted tokens per round, c a draft step's cost over a
target step.

Every method answers the same three questions, so the harness (`specdec.bench.harness`) never asks
which one it holds:

    method.applies(pair, temperature)   can it run on this pair (a draft model? which tokenizer?) at this temperature
    method.gammas(labels)               which of the benchmark's gamma labels it runs with (`specdec.bench.gammas`)
    method.run(pair, input_ids, decoding, gamma, costs, settings)   one generation: an `Outcome`

- `Speculative` ("speculative"): ours, with the pair's draft (a chain at a fixed gamma or under a named
  schedule, a tree, or the default)
- `Plain` ("plain"): ours, the target alone
- `Family`: a drafting method that needs only the target (`specdec.generation.methods`), with its
  defaults and a fresh drafter per run, so no run learns from another prompt's output
- `Eagle` ("eagle"): the EAGLE-3 head `specdec heads train` made for the pair's target, drafting its dynamic
  tree (skipped for a target with no trained head)
- `Transformers`: transformers' "generate", "assisted", "assisted-dynamic", "assisted-default" and
  "hf-prompt-lookup" (`specdec.bench.hf_baselines`)

`BENCH_METHODS` lists them in the order a benchmark runs them; `FAMILIES` are the ones `--methods all`
runs side by side (Spec-Bench style): the draft model and every family.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specdec.bench.gammas import ADAPTIVE, DEFAULT, is_schedule, tree_settings
from specdec.bench.hf_baselines import HF_METHODS, hf_generate
from specdec.drafting.eagle import EagleDrafter
from specdec.engine.costs import CostProfile
from specdec.engine.inputs import Decoding
from specdec.engine.kv_cache import has_sliding_window
from specdec.engine.results import GenerationResult
from specdec.engine.schedule import AdaptiveGamma
from specdec.generation.methods import METHODS, Method, target_only
from specdec.generation.policy import plan_drafting
from specdec.generation.run import run_plan
from specdec.heads.files import load_head, trained_head
from specdec.pairing import AUTO, LoadedPair, generate_plain, generate_speculative


@dataclass(frozen=True)
class Outcome:
    """One run: our engine's full result (None for transformers' baselines, which report tokens and time only)."""

    tokens: list[int]
    wall_time_s: float
    result: GenerationResult | None = None


class BenchMethod:
    """The questions the harness asks of every method; the defaults suit a method that takes no gamma and runs anywhere."""

    name: str
    family: bool = False            # a drafting family run with its own defaults (its draft is the method itself)
    uses_draft_model: bool = False  # its rows carry the pair's draft model: its c, its quantization, its oracle

    def applies(self, pair: LoadedPair, temperature: float = 0.0) -> bool:
        return True

    def gammas(self, labels: tuple[int | str, ...]) -> tuple[int | str | None, ...]:
        """The gamma labels it runs with (None: it takes no gamma)."""
        return (None,)

    def run(self, pair: LoadedPair, input_ids: torch.Tensor, decoding: Decoding, gamma: int | str | None, costs: CostProfile,
            settings) -> Outcome:
        raise NotImplementedError


class Speculative(BenchMethod):
    """Ours, drafted by the pair's draft: fixed gammas, the stop rule, our adaptive gamma, trees, or the default."""

    name, uses_draft_model = "speculative", True

    def gammas(self, labels):
        return labels

    def run(self, pair, input_ids, decoding, gamma, costs, settings):
        tree = AUTO if gamma == DEFAULT else tree_settings(gamma)
        schedule = AdaptiveGamma(costs, settings.max_adaptive_gamma) if gamma == ADAPTIVE else (None if is_schedule(gamma) else gamma)
        result = generate_speculative(pair, input_ids, decoding, gamma=schedule, draft_vocab_limit=settings.draft_vocab_limit, tree=tree)
        return Outcome(result.tokens, result.stats.wall_time_s, result)


class Plain(BenchMethod):
    """Ours, the target alone."""

    name = "plain"

    def run(self, pair, input_ids, decoding, gamma, costs, settings):
        result = generate_plain(pair, input_ids, decoding)
        return Outcome(result.tokens, result.stats.wall_time_s, result)


class Family(BenchMethod):
    """A drafting method that needs only the target, with its defaults and a fresh drafter per run."""

    family = True

    def __init__(self, method: Method) -> None:
        self.method, self.name = method, method.name

    def applies(self, pair, temperature=0.0):
        """Not where it needs every cached position (a tree, its own layers) and the target has sliding windows."""
        return not (self.method.capabilities.full_attention and has_sliding_window(pair.target))

    def run(self, pair, input_ids, decoding, gamma, costs, settings):
        plan = plan_drafting(pair.target, self.method.make(pair.target))
        result = run_plan(pair.target, plan, [input_ids.reshape(-1)], decoding, pair.eos_token_ids)[0]
        return Outcome(result.tokens, result.stats.wall_time_s, result)


class Eagle(BenchMethod):
    """A trained EAGLE-3 head for the pair's target (the pair's own, or the one `specdec heads train` left in the cache)."""

    name, family = "eagle", True

    def __init__(self) -> None:
        self.heads: dict[int, object] = {}      # id(target) -> its head, loaded once (kept off the pair: its draft stays its draft)

    def applies(self, pair, temperature=0.0):
        return (pair.head is not None or trained_head(pair.target_name) is not None) and not has_sliding_window(pair.target)

    def run(self, pair, input_ids, decoding, gamma, costs, settings):
        head = pair.head
        if head is None:
            head = self.heads.get(id(pair.target)) or self.heads.setdefault(id(pair.target), load_head(trained_head(pair.target_name),
                                                                                                         pair.target))
        plan = plan_drafting(pair.target, EagleDrafter(head))          # a fresh drafter: no run learns from another
        result = run_plan(pair.target, plan, [input_ids.reshape(-1)], decoding, pair.eos_token_ids)[0]
        return Outcome(result.tokens, result.stats.wall_time_s, result)


class Transformers(BenchMethod):
    """One of transformers' own: `generate`, assisted generation (three ways) or its prompt lookup."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.uses_draft_model = name.startswith("assisted")

    def applies(self, pair, temperature=0.0):
        """Assisted generation needs a draft model, its prompt lookup none. With a draft of another tokenizer, transformers
        5.24's assisted generation fails when sampling (AttributeError: 'AssistantToTargetTranslator' object has no attribute
        'assistant_overlap_token_ids') and once a sliding-window draft passes its window (a size mismatch in attention)."""
        if self.uses_draft_model:
            if pair.draft is not None and pair.cross_tokenizer and (temperature > 0 or has_sliding_window(pair.draft)):
                return False
            return pair.draft is not None
        if self.name == "hf-prompt-lookup":
            return pair.draft is None
        return True

    def gammas(self, labels):
        if self.name == "assisted-dynamic" and ADAPTIVE in labels:
            return (ADAPTIVE,)            # transformers' schedule from its own default start, not from each fixed gamma
        if self.name in ("assisted", "assisted-dynamic", "hf-prompt-lookup"):
            return tuple(label for label in labels if not is_schedule(label))
        return (None,)

    def run(self, pair, input_ids, decoding, gamma, costs, settings):
        tokenizers = (pair.tokenizer, pair.draft_tokenizer) if pair.cross_tokenizer else None
        tokens, wall = hf_generate(self.name, pair.target, pair.draft, input_ids, gamma=None if gamma == ADAPTIVE else gamma,
                                   eos_token_id=pair.eos_token_ids, tokenizers=tokenizers, **decoding.as_kwargs())
        return Outcome(tokens, wall)


BENCH_METHODS: dict[str, BenchMethod] = {method.name: method for method in (
    Speculative(), Plain(), *(Family(METHODS[name]) for name in target_only()), Eagle(), *(Transformers(name) for name in HF_METHODS))}
FAMILIES = ("speculative",) + tuple(name for name, method in BENCH_METHODS.items() if method.family)
BASELINE = "generate"       # every speedup is over transformers' generate on the same prompt, temperature and repeat
