"""The dashboard's shared settings: one frozen dataclass, and its round trip through a URL query string.

    settings, problems = Settings.from_query({"pair": "prompt-lookup->smollm2-135m", "gamma": "6"}, ["cpu"])
    settings.gamma, settings.draft, settings.target      # 6, 'prompt-lookup', 'smollm2-135m'
    settings.to_query()["gamma"]                        # '6': a link with this query reproduces the settings

A value in a link that is out of range or unknown is replaced by its default and reported in
`problems`, so an old or hand-edited link never breaks the app. No Streamlit here: the sidebar
(`pages.common.sidebar`) draws the widgets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace

from specdec.catalog import DEFAULT_PAIR, PAIRS
from specdec.draft_quantization import QUANTIZATIONS

CUSTOM = "custom"               # the pair picker's entry for your own draft and target
DTYPE_CHOICES = ("auto", "float32", "bfloat16", "float16")
GAMMA_RANGE = (1, 16)
TEMPERATURE_RANGE = (0.0, 2.0)
TOP_K_RANGE = (0, 1000)
TOP_P_RANGE = (0.05, 1.0)
MAX_NEW_TOKENS_RANGE = (1, 512)
SEED_RANGE = (0, 2**31 - 1)


@dataclass(frozen=True)
class Settings:
    """What the sidebar sets: the pair, where and how to run it, and how to decode."""

    pair: str = DEFAULT_PAIR     # a curated pair "draft->target", or CUSTOM
    custom_draft: str = ""       # used when pair == CUSTOM
    custom_target: str = ""
    device: str = "auto"
    dtype: str = "auto"
    draft_quantization: str = "none"  # "int8": a cheaper draft on the CPU, the same output
    gamma: int = 4
    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    max_new_tokens: int = 48
    seed: int = 0

    @property
    def draft(self) -> str:
        return self.custom_draft.strip() if self.pair == CUSTOM else PAIRS[self.pair].draft

    @property
    def target(self) -> str:
        return self.custom_target.strip() if self.pair == CUSTOM else PAIRS[self.pair].target

    @property
    def pair_name(self) -> str:
        """'draft->target', for curated and custom pairs alike."""
        return f"{self.draft}->{self.target}"

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def decoding(self) -> dict[str, float | int]:
        """The keyword arguments of `pairing.generate_speculative` / `generate_plain`."""
        return dict(gamma=self.gamma, max_new_tokens=self.max_new_tokens, temperature=self.temperature,
                    top_k=self.top_k, top_p=self.top_p, seed=self.seed)

    def to_query(self) -> dict[str, str]:
        """Every setting as text; the custom names only for a custom pair."""
        values = {name: str(value) for name, value in asdict(self).items()}
        if self.pair != CUSTOM:
            del values["custom_draft"], values["custom_target"]
        return values

    @classmethod
    def from_query(cls, query: Mapping[str, str], devices: Sequence[str]) -> tuple[Settings, list[str]]:
        """Settings from a query string's values; unknown or bad values fall back to defaults, listed in the second result."""
        settings, problems = cls(), []
        for field in fields(cls):
            if field.name not in query:
                continue
            text = str(query[field.name])
            value = _parse(field.name, text, devices)
            if value is None:
                problems.append(f"{field.name}={text}")
            else:
                settings = replace(settings, **{field.name: value})
        return settings, problems


def _in_range(value, bounds):
    low, high = bounds
    return value if low <= value <= high else None


def _parse(name: str, text: str, devices: Sequence[str]):
    """One query value as the field's type, or None when it is not acceptable."""
    try:
        if name == "pair":
            return text if text in PAIRS or text == CUSTOM else None
        if name in ("custom_draft", "custom_target"):
            return text
        if name == "device":
            return text if text in ("auto", *devices) else None
        if name == "dtype":
            return text if text in DTYPE_CHOICES else None
        if name == "draft_quantization":
            return text if text in QUANTIZATIONS else None
        if name == "gamma":
            return _in_range(int(text), GAMMA_RANGE)
        if name == "temperature":
            return _in_range(float(text), TEMPERATURE_RANGE)
        if name == "top_k":
            return _in_range(int(text), TOP_K_RANGE)
        if name == "top_p":
            return _in_range(float(text), TOP_P_RANGE)
        if name == "max_new_tokens":
            return _in_range(int(text), MAX_NEW_TOKENS_RANGE)
        if name == "seed":
            return _in_range(int(text), SEED_RANGE)
    except ValueError:
        return None
    return None
