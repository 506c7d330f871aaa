"""The dashboard's shared settings: one frozen dataclass, and its round trip through a URL query string.

    settings, problems = Settings.from_query({"pair": "prompt-lookup->smollm2-135m", "gamma": "6"}, ["cpu"])
    settings.gamma, settings.draft, settings.target      # 6, 'prompt-lookup', 'smollm2-135m'
    settings.decoding.temperature                       # 0.0: the `specdec.engine.inputs.Decoding` every run gets
    settings.to_query()["gamma"]                        # '6': a link with this query reproduces the settings

A value in a link that is out of range or unknown is replaced by its default and reported in
`problems`, so an old or hand-edited link never breaks the app. Each query key has one parser in
`PARSERS`. No Streamlit here: the sidebar (`pages.common.sidebar`) draws the widgets.

Besides the curated pairs, a curated target whose EAGLE-3 head is trained (`specdec heads train`, in the
cache) has a pair of its own, "eagle->TARGET" (`head_pairs`): its draft is the head, `load_pair`'s "eagle".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace

from specdec.drafting.tree_drafter import TreeSettings
from specdec.engine.inputs import Decoding
from specdec.generation.methods import METHODS, is_target_only
from specdec.heads.files import is_head, trained_head
from specdec.kernels.devices import DTYPE_CHOICES
from specdec.kernels.quantization import QUANTIZATION_CHOICES
from specdec.zoo.catalog import DEFAULT_PAIR, PAIRS, PairEntry, split_pair_name

CUSTOM = "custom"               # the pair picker's entry for your own draft and target
GAMMA_RANGE = (1, 16)
TREE_BUDGET_RANGE = (1, 64)
TEMPERATURE_RANGE = (0.0, 2.0)
TOP_K_RANGE = (0, 1000)
TOP_P_RANGE = (0.05, 1.0)
MAX_NEW_TOKENS_RANGE = (1, 512)
SEED_RANGE = (0, 2**31 - 1)
HEAD = "eagle"                  # the draft name of the head `specdec heads train` made for a target


def head_pairs() -> dict[str, PairEntry]:
    """'eagle->TARGET' for every curated pair's target that has a trained head in the cache, in the catalogue's order."""
    targets = dict.fromkeys(pair.target for pair in PAIRS.values())
    return {f"{HEAD}->{target}": PairEntry(HEAD, target, f"the EAGLE-3 head trained for {target} on this machine: one decoder layer "
                                                         "that reads the target's own hidden states and drafts a tree")
            for target in targets if trained_head(target) is not None}


@dataclass(frozen=True)
class Settings:
    """What the sidebar sets: the pair, where and how to run it, gamma, and how to decode."""

    pair: str = DEFAULT_PAIR     # a curated pair "draft->target", a head's "eagle->target", or CUSTOM
    custom_draft: str = ""       # used when pair == CUSTOM
    custom_target: str = ""
    device: str = "auto"
    dtype: str = "auto"
    quantization: str = "auto"        # the target's weights: auto (int8 on a CPU), none, int8, int4
    draft_quantization: str = "auto"  # the draft's weights: auto (int4 on a CPU), none, int8, int4 (a cheaper draft, the same output)
    stop_rule: bool = True            # draft while another token is worth its cost (specdec.engine.stop_rule); else gamma
    gamma: int = 4                    # drafted tokens per round when the stop rule is off
    tree: bool = False                # draft a token tree (specdec.TreeDrafter) instead of a chain
    tree_budget: int = 16             # at most this many drafted nodes per tree
    decoding: Decoding = field(default_factory=lambda: Decoding(max_new_tokens=128, temperature=0.0, seed=0))

    @property
    def draft(self) -> str:
        return self.custom_draft.strip() if self.pair == CUSTOM else split_pair_name(self.pair)[0]

    @property
    def target(self) -> str:
        return self.custom_target.strip() if self.pair == CUSTOM else split_pair_name(self.pair)[1]

    @property
    def own_rounds(self) -> bool:
        """Whether the pair's draft sizes its own rounds (Token Recycling, a trained head ...): gamma and the tree do not apply."""
        if self.draft and is_head(self.draft):
            return METHODS[HEAD].capabilities.sizes_rounds
        return is_target_only(self.draft) and METHODS[self.draft].capabilities.sizes_rounds

    @property
    def schedule(self) -> int | None:
        """The `gamma` argument of `generate_speculative`: None (the stop rule, a tree, a method's own rounds) or the fixed gamma."""
        return None if self.stop_rule or self.tree or self.own_rounds else self.gamma

    @property
    def tree_settings(self) -> TreeSettings | None:
        """The `tree` argument of `generate_speculative`: None for a chain (or a method's own rounds), else the tree's limits."""
        return TreeSettings(budget=self.tree_budget) if self.tree and not self.own_rounds else None

    @property
    def drafting(self) -> str:
        """How rounds are drafted, in words: 'tree (budget 16)', 'stop rule', 'gamma 4' or 'its own rounds'."""
        if self.own_rounds:
            return f"{self.draft}'s own rounds"
        if self.tree:
            return f"tree (budget {self.tree_budget})"
        return "stop rule" if self.stop_rule else f"gamma {self.gamma}"

    @property
    def pair_name(self) -> str:
        """'draft->target', for curated and custom pairs alike."""
        return f"{self.draft}->{self.target}"

    def to_query(self) -> dict[str, str]:
        """Every setting as text, the decoding's fields flattened in; the custom names only for a custom pair."""
        values = {name: str(value) for name, value in asdict(self).items() if name != "decoding"}
        values |= {name: str(value) for name, value in asdict(self.decoding).items()}
        if self.pair != CUSTOM:
            del values["custom_draft"], values["custom_target"]
        return values

    @classmethod
    def from_query(cls, query: Mapping[str, str], devices: Sequence[str]) -> tuple[Settings, list[str]]:
        """Settings from a query string's values; unknown or bad values fall back to defaults, listed in the second result."""
        settings, problems = cls(), []
        decoding_fields = {item.name for item in fields(Decoding)}
        for name, parse in PARSERS.items():
            if name not in query:
                continue
            value = parse(str(query[name]), devices)
            if value is None:
                problems.append(f"{name}={query[name]}")
            elif name in decoding_fields:
                settings = replace(settings, decoding=replace(settings.decoding, **{name: value}))
            else:
                settings = replace(settings, **{name: value})
        return settings, problems


Parser = Callable[[str, Sequence[str]], object]   # (query text, this machine's devices) -> value, or None if unacceptable


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


PARSERS: dict[str, Parser] = {
    "pair": _one_of(lambda devices: (*PAIRS, *head_pairs(), CUSTOM)),
    "custom_draft": _text,
    "custom_target": _text,
    "device": _one_of(lambda devices: ("auto", *devices)),
    "dtype": _one_of(lambda devices: DTYPE_CHOICES),
    "quantization": _one_of(lambda devices: QUANTIZATION_CHOICES),
    "draft_quantization": _one_of(lambda devices: QUANTIZATION_CHOICES),
    "stop_rule": lambda text, devices: {"True": True, "False": False}.get(text),
    "gamma": _number(int, GAMMA_RANGE),
    "tree": lambda text, devices: {"True": True, "False": False}.get(text),
    "tree_budget": _number(int, TREE_BUDGET_RANGE),
    "max_new_tokens": _number(int, MAX_NEW_TOKENS_RANGE),
    "temperature": _number(float, TEMPERATURE_RANGE),
    "top_k": _number(int, TOP_K_RANGE),
    "top_p": _number(float, TOP_P_RANGE),
    "seed": _number(int, SEED_RANGE),
}
