"""The dashboard's shared settings: one frozen dataclass that builds one `RunSpec`, and its round trip through a URL.

    settings, problems = Settings.from_query({"pair": "qwen2.5-coder-0.5b->qwen2.5-coder-1.5b", "method": "tree",
                                              "opt.budget": "8"}, ["cpu"])
    #  Drafting(method='tree', gamma=None, options=(('budget', '8'),)): what every page runs
    settings.spec.drafting
    settings.to_query()["method"]  # 'tree': a link with this query reproduces the settings

Every page loads and generates with `settings.spec` (`specdec.pair.loading.load_spec`, `specdec.pair.running.generate`),
and the planner's plan for it says what the run does (`Plan.header`, the line `specdec run` prints). Nothing here
decides how a run drafts: which method a draft name stands for, what a method's options are and whether it sizes its own
rounds are the registry's (`specdec.registry`); what a draft model drafts when left to itself is the policy's, and the
run reports it.

The query keys, one parser each (`PARSERS`, then the method's options):

    pair, custom_draft, custom_target      a pair of `specdec.registry.pairs()` ("draft->target"), or CUSTOM and two
                                           names
    device, dtype, quantization, draft_quantization, runtime    how the models run (`specdec.run_spec.ModelChoices`)
    method                                 AUTO (what the draft stands for, or the policy's choice for a draft model)
                                           or a method of the registry that drafts with the pair's draft model
    opt.NAME                               one of the method's options ("opt.budget=8"), a field of its options
                                           dataclass
    stop_rule, gamma                       stop_rule=True: the planner sizes the rounds; else a fixed gamma 1..64
                                           (`GAMMA_RANGE`)
    max_new_tokens, temperature, top_k, top_p, seed     the decoding

Older links keep working: `tree=True&tree_budget=9` is the tree method with budget 9. A value in a link that
is out of range, unknown or unfit for the pair is replaced by its default and reported in `problems`, so an old
or hand-edited link never breaks the app. No Streamlit here: the sidebar (`pages.common.sidebar`) draws the widgets.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace

from specdec.engine.inputs import Decoding
from specdec.errors import SpecdecError
from specdec.kernels.devices import DTYPE_CHOICES
from specdec.kernels.quantization import QUANTIZATION_CHOICES
from specdec.registry import DRAFT_MODEL, METHODS, TREE, Method, draft_methods, needs_of, pairs
from specdec.run_spec import FASTEST_PLAN, GAMMA_RANGE, Drafting, ModelChoices, RunSpec
from specdec.runtimes import choices as runtime_choices
from specdec.zoo.catalog import DEFAULT_PAIR, split_pair_name

CUSTOM = "custom"  # the pair picker's entry for your own draft and target
AUTO = "auto"  # the method picker's entry for "what the draft stands for, or the policy's choice"
FASTEST = "fastest"  # ... for the planner's fastest exact plan here (`specdec run --method auto`)
OPTION = "opt."  # the query keys of the method's options: opt.budget=8
TREE_BUDGET_RANGE = (1, 64)  # older links' tree_budget
TEMPERATURE_RANGE = (0.0, 2.0)
TOP_K_RANGE = (0, 1000)
TOP_P_RANGE = (0.05, 1.0)
MAX_NEW_TOKENS_RANGE = (1, 512)
SEED_RANGE = (0, 2**31 - 1)


def implied_method(draft: str) -> Method | None:
    """The method a draft name stands for ('prompt-lookup', a trained head's 'eagle'), or None for a draft model (and
    for a name the run spec will refuse, which it then says why).

    >>> implied_method("prompt-lookup").name, implied_method("qwen2.5-coder-0.5b")
    ('prompt-lookup', None)
    """
    if not draft.strip():
        return None
    try:
        return needs_of(draft)[0]
    except SpecdecError:
        return None


def loads_a_draft_model(draft: str) -> bool:
    """Whether the draft name is a model to load (not a method needing only the target, nor a trained head)."""
    if not draft.strip():
        return True
    try:
        return DRAFT_MODEL in needs_of(draft)[1]
    except SpecdecError:
        return False


def drafts_with(draft: str, resource: str) -> bool:
    """Whether the method a draft name stands for needs `resource` (`specdec.registry.HEAD`: a trained head), as the
    registry says.

    >>> from specdec.registry import HEAD
    >>> drafts_with("eagle", HEAD), drafts_with("prompt-lookup", HEAD)
    (True, False)
    """
    method = implied_method(draft)
    return method is not None and resource in method.needs


def method_choices(draft: str) -> tuple[str, ...]:
    """What the method picker offers for a draft: AUTO alone where the draft stands for a method, else AUTO and every
    method of the registry that drafts with the pair's draft model."""
    return (AUTO,) if implied_method(draft) is not None else (AUTO, FASTEST, *draft_methods())


def pair_choices() -> list[str]:
    """The pair picker's entries: the registry's pairs grouped by target, in the catalogue's order (a target's methods
    and its trained head after its draft models), then CUSTOM."""
    found = pairs()
    targets = list(dict.fromkeys(entry.target for entry in found.values()))
    return sorted(found, key=lambda name: targets.index(found[name].target)) + [CUSTOM]


@dataclass(frozen=True)
class Settings:
    """What the sidebar sets: the pair, how its models run, how
    it drafts, how it decodes; `spec` is the run they describe."""

    pair: str = DEFAULT_PAIR  # a pair of `specdec.registry.pairs()` "draft->target", or CUSTOM
    custom_draft: str = ""  # used when pair == CUSTOM
    custom_target: str = ""
    device: str = "auto"
    dtype: str = "auto"
    quantization: str = "auto"  # the target's weights: auto (int8 on a CPU), none, int8, int4, w8a8
    # the draft's weights: auto (int4 on a CPU), none, int8, int4 (a cheaper draft, the same output)
    draft_quantization: str = "auto"
    runtime: str = "auto"  # `specdec.runtimes.choices()`
    method: str = AUTO  # AUTO, or a method of the registry drafting with the pair's draft model
    # the method's options by name, as text (`specdec.registry.Method.parse_options`)
    options: tuple[tuple[str, str], ...] = ()
    # leave each round's length to the planner (its query key kept from when it was the stop rule)
    stop_rule: bool = True
    gamma: int = 4  # drafted tokens per round when the planner does not size them
    decoding: Decoding = field(default_factory=lambda: Decoding(max_new_tokens=128, temperature=0.0, seed=0))

    @property
    def draft(self) -> str:
        return self.custom_draft.strip() if self.pair == CUSTOM else split_pair_name(self.pair)[0]

    @property
    def target(self) -> str:
        return self.custom_target.strip() if self.pair == CUSTOM else split_pair_name(self.pair)[1]

    @property
    def pair_name(self) -> str:
        """'draft->target', for curated and custom pairs alike."""
        return f"{self.draft}->{self.target}"

    @property
    def chosen_method(self) -> Method | None:
        """The registry's method the settings ask for: the one picked, else the one the draft stands for; None when a
        draft model is left to the policy."""
        if self.method not in (AUTO, FASTEST):
            return METHODS.get(self.method)
        return implied_method(self.draft)

    @property
    def spec(self) -> RunSpec:
        """The one run these settings describe: gamma only where the
        planner does not size the rounds and the method does not."""
        method = self.chosen_method
        sizes_rounds = method is not None and method.capabilities.sizes_rounds
        models = ModelChoices(self.device, self.dtype, self.quantization, self.draft_quantization, self.runtime)
        named = {AUTO: None, FASTEST: FASTEST_PLAN}.get(self.method, self.method)
        drafting = Drafting(
            named, None if self.stop_rule or sizes_rounds or named == FASTEST_PLAN else self.gamma, self.options
        )
        return RunSpec(self.target, self.draft, models, drafting, self.decoding)

    def to_query(self) -> dict[str, str]:
        """Every setting as text, the decoding's fields and the method's
        options flattened in; the custom names only for a custom pair."""
        values = {name: str(value) for name, value in asdict(self).items() if name not in ("decoding", "options")}
        values |= {name: str(value) for name, value in asdict(self.decoding).items()}
        values |= {OPTION + name: text for name, text in self.options}
        if self.pair != CUSTOM:
            del values["custom_draft"], values["custom_target"]
        return values

    @classmethod
    def from_query(cls, query: Mapping[str, str], devices: Sequence[str]) -> tuple[Settings, list[str]]:
        """Settings from a query string's values; unknown, bad or unfit
        values fall back to defaults, listed in the second result."""
        settings, problems, older = cls(), [], {}
        decoding_fields = {item.name for item in fields(Decoding)}
        for name, parse in PARSERS.items():
            if name not in query:
                continue
            value = parse(str(query[name]), devices)
            if value is None:
                problems.append(f"{name}={query[name]}")
            elif name in OLDER_KEYS:
                older[name] = value
            elif name in decoding_fields:
                settings = replace(settings, decoding=replace(settings.decoding, **{name: value}))
            else:
                settings = replace(settings, **{name: value})
        asked = f"method={query['method']}" if "method" in query else None
        if asked is None and older.get(TREE):  # an older link: the tree method, and its budget
            budget = (("budget", str(older[TREE_BUDGET])),) if TREE_BUDGET in older else ()
            settings, asked = replace(settings, method=TREE, options=budget), f"{TREE}={query[TREE]}"
        settings, unfit = _fitting_method(settings)
        if unfit:
            problems.append(asked)
        settings, bad_options = _parsed_options(
            settings,
            {name.removeprefix(OPTION): str(text) for name, text in query.items() if name.startswith(OPTION)}
            or dict(settings.options),
        )
        return settings, problems + bad_options


def _fitting_method(settings: Settings) -> tuple[Settings, bool]:
    """The settings with a method the pair can run (the one the draft
    stands for is written AUTO), and whether one was dropped."""
    implied = implied_method(settings.draft)
    if implied is not None and settings.method == implied.name:
        return replace(settings, method=AUTO), False
    if settings.method in method_choices(settings.draft):
        return settings, False
    return replace(settings, method=AUTO, options=()), True


def _parsed_options(settings: Settings, given: dict[str, str]) -> tuple[Settings, list[str]]:
    """The settings with the options of its method that parse (in the order of its fields, as the method writes them),
    and the query's 'opt.NAME=VALUE' of those that do not."""
    method, kept, problems = settings.chosen_method, {}, []
    for name, text in given.items():
        try:
            if method is None:
                raise SpecdecError("options belong to a method")
            kept[name] = str(asdict(method.parse_options({name: text}))[name])
        except SpecdecError:
            problems.append(f"{OPTION}{name}={text}")
    order = [item.name for item in fields(method.options)] if method is not None else []
    if method is not None and kept:
        try:
            method.parse_options(kept)  # the options together (one may bound another)
        except SpecdecError:
            problems += [f"{OPTION}{name}={given[name]}" for name in kept]
            kept = {}
    return replace(settings, options=tuple((name, kept[name]) for name in order if name in kept)), problems


# (query text, this machine's devices) -> value, or None if unacceptable
Parser = Callable[[str, Sequence[str]], object]


def _text(text: str, devices: Sequence[str]) -> str:
    return text


def _one_of(choices: Callable[[Sequence[str]], Sequence[str]]) -> Parser:
    return lambda text, devices: text if text in choices(devices) else None


def _number(kind: type, bounds: tuple[float, float]) -> Parser:
    def parse(text: str, devices: Sequence[str]):
        try:
            value = kind(text)
        except ValueError:
            return None
        return value if bounds[0] <= value <= bounds[1] else None

    return parse


def _flag(text: str, devices: Sequence[str]) -> bool | None:
    return {"True": True, "False": False}.get(text)


TREE_BUDGET = f"{TREE}_budget"
OLDER_KEYS = (TREE, TREE_BUDGET)  # links from before the method picker (tree=True&tree_budget=9): read, never written
PARSERS: dict[str, Parser] = {
    "pair": _one_of(lambda devices: (*pairs(), CUSTOM)),
    "custom_draft": _text,
    "custom_target": _text,
    "device": _one_of(lambda devices: ("auto", *devices)),
    "dtype": _one_of(lambda devices: DTYPE_CHOICES),
    "quantization": _one_of(lambda devices: QUANTIZATION_CHOICES),
    "draft_quantization": _one_of(lambda devices: QUANTIZATION_CHOICES),
    "runtime": _one_of(lambda devices: runtime_choices()),
    "method": _one_of(lambda devices: (AUTO, *METHODS)),
    "stop_rule": _flag,
    "gamma": _number(int, GAMMA_RANGE),
    TREE: _flag,
    TREE_BUDGET: _number(int, TREE_BUDGET_RANGE),
    "max_new_tokens": _number(int, MAX_NEW_TOKENS_RANGE),
    "temperature": _number(float, TEMPERATURE_RANGE),
    "top_k": _number(int, TOP_K_RANGE),
    "top_p": _number(float, TOP_P_RANGE),
    "seed": _number(int, SEED_RANGE),
}


def asked_for(settings: Settings) -> str:
    """What the settings ask a run to draft with, in the registry's names, before it runs (the run then says what it
    drafted, `result.drafting`): 'tree, budget 8', 'draft-model, gamma 6', 'prompt-lookup', 'auto, the policy's choice'.

    >>> asked_for(Settings(method="tree", options=(("budget", "8"), ("depth", "12"))))
    'tree, budget 8'
    """
    spec, method = settings.spec, settings.chosen_method
    if method is None:
        return "auto, the policy's choice" + ("" if spec.drafting.gamma is None else f", gamma {spec.drafting.gamma}")
    defaults = {name: str(value) for name, value in asdict(method.options()).items()}
    words = [method.name] + [
        f"{name.replace('_', ' ')} {text}" for name, text in settings.options if defaults.get(name) != text
    ]
    return ", ".join(words + ([] if spec.drafting.gamma is None else [f"gamma {spec.drafting.gamma}"]))
