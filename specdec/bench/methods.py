"""What a benchmark can run, one object per method: our engine, each drafting family, transformers' baselines.

Notation: p is the target, q the draft, gamma the drafted tokens per round, c a draft step's cost over a
target step.

Every method answers the same three questions, so the harness (`specdec.bench.harness`) never asks
which one it holds:

    method.applies(pair, temperature)   can it run on this pair (a draft model? which tokenizer? which runtime?)
    method.gammas(labels)               which of the benchmark's gamma labels it runs with (`specdec.bench.gammas`)
    method.run(pair, input_ids, decoding, gamma, costs, settings)   one generation: an `Outcome`

- `Speculative` ("speculative"): ours, with the pair's draft (a chain at a fixed gamma or under a named
  schedule, a tree, or the default)
- `Plain` ("plain"): ours, the target alone
- `Family`: a drafting method of the registry (`specdec.registry`) run with its defaults and a fresh drafter
  per run, so no run learns from another prompt's output; what it needs beyond the pair (a trained head)
  is loaded once, where one is at hand for the target, and the method is skipped where none is
- `Transformers`: transformers' "generate", "assisted", "assisted-dynamic", "assisted-default" and
  "hf-prompt-lookup" (`specdec.bench.hf_baselines`)

`bench_methods()` lists them in the order a benchmark runs them, `families()` the ones `--methods all`
runs side by side (Spec-Bench style): the pair's draft and every family of the registry. Both are read
from the registry when asked, so a method registered later is benchmarked with no change here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from specdec.bench.gammas import ADAPTIVE, drafting_of, is_schedule
from specdec.bench.hf_baselines import HF_METHODS, hf_generate
from specdec.engine.costs import CostProfile
from specdec.engine.inputs import Decoding
from specdec.engine.results import GenerationResult
from specdec.pair.resources import LoadedPair
from specdec.pair.running import generate, generate_plain, run
from specdec.planner.drafting import refused
from specdec.planner.plan import run_method
from specdec.registry import METHODS, RESOURCES, Method
from specdec.run_spec import Drafting
from specdec.runtime import transformers_model


@dataclass(frozen=True)
class Outcome:
    """One run: our engine's full result (None for transformers' baselines, which report tokens and time only)."""

    tokens: list[int]
    wall_time_s: float
    result: GenerationResult | None = None


class BenchMethod:
    """The questions the harness asks of every method; the defaults
    suit a method that takes no gamma and runs anywhere."""

    name: str
    family: bool = False  # a drafting family run with its own defaults (its draft is the method itself)
    uses_draft_model: bool = False  # its rows carry the pair's draft model: its c, its quantization, its oracle

    def applies(self, pair: LoadedPair, temperature: float = 0.0) -> bool:
        return True

    def gammas(self, labels: tuple[int | str, ...]) -> tuple[int | str | None, ...]:
        """The gamma labels it runs with (None: it takes no gamma)."""
        return (None,)

    def run(
        self,
        pair: LoadedPair,
        input_ids: torch.Tensor,
        decoding: Decoding,
        gamma: int | str | None,
        costs: CostProfile,
        settings,
    ) -> Outcome:
        raise NotImplementedError


class Speculative(BenchMethod):
    """Ours, drafted by the pair's draft: fixed gammas, the stop rule, our adaptive gamma, trees, or the default."""

    name, uses_draft_model = "speculative", True

    def gammas(self, labels):
        return labels

    def run(self, pair, input_ids, decoding, gamma, costs, settings):
        result = generate(pair, input_ids, pair.spec(drafting_for(pair, gamma, settings), decoding))
        return Outcome(result.tokens, result.stats.wall_time_s, result)


def drafting_for(pair: LoadedPair, gamma: int | str | None, settings) -> Drafting:
    """The run spec's drafting of the pair's draft for a gamma label (`specdec.bench.gammas.drafting_of`): its own
    method (the one its draft implies), with the benchmark's draft vocabulary limit where that method takes one."""
    method = run_method(pair.spec(), pair.resources)
    takes_limit = "vocab_limit" in {item.name for item in dataclasses.fields(method.options)}
    limit = (("vocab_limit", str(settings.draft_vocab_limit)),) if settings.draft_vocab_limit and takes_limit else ()
    return drafting_of(gamma, method.name, settings.max_adaptive_gamma, limit)


class Plain(BenchMethod):
    """Ours, the target alone."""

    name = "plain"

    def run(self, pair, input_ids, decoding, gamma, costs, settings):
        result = generate_plain(pair, input_ids, decoding)
        return Outcome(result.tokens, result.stats.wall_time_s, result)


class Family(BenchMethod):
    """A drafting method of the registry with its defaults and a fresh drafter per run; what it needs beyond the pair (a
    trained head) loaded once per target, from where `specdec.registry.RESOURCES` finds one."""

    family = True

    def __init__(self, method: Method) -> None:
        self.method, self.name = method, method.name
        # (id of the target, resource) -> loaded once (kept off the pair)
        self.extra: dict[tuple[int, str], object] = {}

    def applies(self, pair, temperature=0.0):
        """Where the pair has what it needs (or one is at hand for its target) and the target's runtime serves it."""
        if refused(pair.target, self.method.capabilities, self.name) is not None:
            return False
        return all(
            need in pair.resources
            or (
                need in RESOURCES
                and RESOURCES[need].made_for is not None
                and RESOURCES[need].made_for(pair.target_name)
            )
            for need in self.method.needs
        )

    def resources(self, pair: LoadedPair) -> dict:
        resources = dict(pair.resources)
        for need in self.method.needs:
            if need not in resources:
                key = (id(pair.target), need)
                if key not in self.extra:
                    found = RESOURCES[need]
                    self.extra[key] = found.load(found.draft_name, pair.target_name, pair.target, "auto")
                resources[need] = self.extra[key]
        return resources

    def run(self, pair, input_ids, decoding, gamma, costs, settings):
        spec = pair.spec(Drafting(self.name), decoding)
        plan = pair.plan(spec, fresh=True, resources=self.resources(pair))  # fresh: no run learns from another
        result = run(pair, plan, [input_ids.reshape(-1)], decoding)[0]
        return Outcome(result.tokens, result.stats.wall_time_s, result)


class Transformers(BenchMethod):
    """One of transformers' own: `generate`, assisted generation
    (three ways) or its prompt lookup (torch models only)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.uses_draft_model = name.startswith("assisted")

    def applies(self, pair, temperature=0.0):
        """Assisted generation needs a draft model, its prompt lookup none; all of them a transformers model. With a
        draft of another tokenizer, transformers 5.24's assisted generation fails when sampling (AttributeError:
        'AssistantToTargetTranslator' object has no attribute 'assistant_overlap_token_ids') and once a sliding-window
        draft passes its window (a size mismatch in attention)."""
        if not pair.target.traits.internals:
            return False
        if self.uses_draft_model:
            if (
                pair.draft is not None
                and pair.cross_tokenizer
                and (temperature > 0 or pair.draft.traits.sliding_window)
            ):
                return False
            return pair.draft is not None and pair.draft.traits.internals
        if self.name == "hf-prompt-lookup":
            return pair.draft is None
        return True

    def gammas(self, labels):
        if self.name == "assisted-dynamic" and ADAPTIVE in labels:
            return (ADAPTIVE,)  # transformers' schedule from its own default start, not from each fixed gamma
        if self.name in ("assisted", "assisted-dynamic", "hf-prompt-lookup"):
            return tuple(label for label in labels if not is_schedule(label))
        return (None,)

    def run(self, pair, input_ids, decoding, gamma, costs, settings):
        tokenizers = (pair.tokenizer, pair.draft_tokenizer) if pair.cross_tokenizer else None
        draft = None if pair.draft is None else transformers_model(pair.draft, "transformers' own generate")
        target = transformers_model(pair.target, "transformers' own generate")
        tokens, wall = hf_generate(
            self.name,
            target,
            draft,
            input_ids,
            gamma=None if gamma == ADAPTIVE else gamma,
            eos_token_id=pair.eos_token_ids,
            tokenizers=tokenizers,
            **decoding.as_kwargs(),
        )
        return Outcome(tokens, wall)


_FAMILIES: dict[str, Family] = {}  # one object per registered family, kept: a head it loaded is loaded once


def _family(method: Method) -> Family:
    if _FAMILIES.get(method.name) is None or _FAMILIES[method.name].method is not method:
        _FAMILIES[method.name] = Family(method)
    return _FAMILIES[method.name]


_FIXED = {method.name: method for method in (Speculative(), Plain())}
_BASELINES = {name: Transformers(name) for name in HF_METHODS}


def bench_methods() -> dict[str, BenchMethod]:
    """Every method a benchmark can run, in the order it runs them: ours, each registered family, transformers' own."""
    families = {name: _family(method) for name, method in METHODS.items() if method.family}
    return {**_FIXED, **families, **_BASELINES}


def families() -> tuple[str, ...]:
    """What `--methods all` runs side by side: the pair's draft ('speculative') and every registered family."""
    return ("speculative",) + tuple(name for name, method in bench_methods().items() if method.family)


BASELINE = "generate"  # every speedup is over transformers' generate on the same prompt, temperature and repeat
