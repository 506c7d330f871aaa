"""What a drafting method may need loaded besides the target: the resources' names, how a trained head is found and
loaded (`Resource`, `RESOURCES`), and the corpus files a method may read.

    >>> sorted(RESOURCES), TARGET, DRAFT_MODEL
    (['head'], 'target', 'draft model')
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specdec.errors import SpecdecError
from specdec.heads.files import find_head, is_head, load_for_target, trained_head

TARGET, TOKENIZER = "target", "tokenizer"  # always loaded
DRAFT_MODEL = "draft model"  # a model sharing the target's tokenizer ...
DRAFT_TOKENIZER = "draft tokenizer"  # ... or one with its own (then both are loaded)
HEAD = "head"  # a head trained for the target (specdec heads train)
CORPUS = "corpus"  # text files whose tokens a method may draft from
WHOLE = "draft vocabulary"  # with a draft tokenizer: which of its tokens are whole characters

Resources = dict[str, Any]  # resource name -> what was loaded (the target: a model)


@dataclass(frozen=True)
class Resource:
    """One thing a method may need besides the target: which draft
    names mean it, how it is loaded, where one is at hand."""

    name: str
    summary: str
    claims: Callable[[str], bool]  # whether a draft name means this resource ("eagle", a head's folder)
    load: Callable[..., object]  # (draft name, target name, target model, weights) -> it
    draft_name: str = ""  # the draft name that means "the one made for this target"
    made_for: Callable[[str], bool] | None = None  # whether one is at hand for a target (a pair is offered then)
    check: Callable[[str, str], object] | None = None  # (draft name, target name): refuse a missing one before loading


def corpus_tokens(resources: Resources) -> list[list[int]]:
    """The corpus's texts as token ids, where a run was given one (else none)."""
    return resources.get(CORPUS, [])


RESOURCES: dict[str, Resource] = {
    HEAD: Resource(
        HEAD,
        "EAGLE-3 head trained on this machine (specdec heads train): one decoder layer reading the target's own hidden "
        "states",
        is_head,
        load_for_target,
        draft_name="eagle",
        made_for=lambda target: trained_head(target) is not None,
        check=find_head,
    )
}


def corpus_files(paths: tuple[str, ...] | list[str]) -> list[str]:
    """The text of each corpus file (one clear line when one cannot be read)."""
    texts = []
    for path in paths:
        try:
            texts.append(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as error:
            raise SpecdecError(
                f"cannot read the corpus file {path}: {error.strerror if isinstance(error, OSError) else error}; "
                "give UTF-8 text files"
            ) from None
    return texts
