"""Huge pages for llama.cpp's weights (`specdec.runtime.llama_cpp.huge_pages`): asked for once, before the first tensor
is read, only for the regions the load made; the same logits bit for bit; a failure to ask is no failure to load."""

from __future__ import annotations

import mmap

import pytest
import torch

from specdec.errors import SpecdecError
from specdec.runtime.llama_cpp import huge_pages

BEFORE = "7f0000000000-7f0040000000 rw-p 00000000 00:00 0\n"  # 1 GiB that was there before the load
NEW = "7f0080000000-7f00c0000000 rw-p 00000000 00:00 0\n"  # 1 GiB the load made


class FakeFfi:
    def callback(self, kind, function, onerror=None):
        assert kind == "llama_progress_callback" and onerror(ValueError, ValueError(), None) is True
        return function


def _loading(monkeypatch, setting="madvise", ask=True):
    maps = [BEFORE]
    advised: list[set] = []
    monkeypatch.setattr(huge_pages, "thp_setting", lambda: setting)
    monkeypatch.setattr(huge_pages, "_maps", lambda: "".join(maps))
    monkeypatch.setattr(huge_pages, "advise", lambda regions: advised.append(regions) or 1 << 30)
    loading = huge_pages.HugePagesOnLoad(FakeFfi(), ask)
    maps.append(NEW)  # llama.cpp allocates its buffers, then calls back before the first tensor
    return loading, advised


def test_only_the_regions_the_load_made_are_advised_and_only_once(monkeypatch):
    loading, advised = _loading(monkeypatch)
    assert loading.callback(0.0, None) is True and loading.callback(0.5, None) is True
    assert advised == [{(0x7F0080000000, 0x7F00C0000000)}] and loading.asked == 1 << 30


@pytest.mark.parametrize("setting, ask", [("always", True), ("never", True), ("", True), ("madvise", False)])
def test_nothing_is_asked_where_it_changes_nothing_or_was_not_asked_for(monkeypatch, setting, ask):
    loading, advised = _loading(monkeypatch, setting, ask)
    assert loading.callback is None and not advised


def test_it_is_opt_in(monkeypatch):
    monkeypatch.delenv("SPECDEC_HUGE_PAGES", raising=False)
    assert not huge_pages.wanted()
    monkeypatch.setenv("SPECDEC_HUGE_PAGES", "1")
    assert huge_pages.wanted()
    monkeypatch.setenv("SPECDEC_HUGE_PAGES", "0")
    assert not huge_pages.wanted()


@pytest.mark.skipif(huge_pages.thp_setting() in ("", "never"), reason="this kernel gives no transparent huge pages")
def test_the_kernel_takes_the_advice_for_a_real_region():
    before = huge_pages.anonymous_regions(huge_pages._maps())
    region = mmap.mmap(-1, 64 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)  # 64 MiB, as malloc makes them
    try:
        made = huge_pages.anonymous_regions(huge_pages._maps()) - before
        assert len(made) == 1 and huge_pages.advise(made) >= 62 << 20  # its whole huge pages: all but one at most
    finally:
        region.close()


def test_a_load_that_asks_gives_the_same_logits_and_survives_a_failure_to_ask(tmp_path, monkeypatch):
    try:
        from specdec.runtime.llama_cpp.library import library_path

        library_path()
    except (ImportError, SpecdecError) as error:  # pragma: no cover - depends on the environment
        pytest.skip(f"the llama.cpp runtime is not installed here: {error}")
    from specdec.runtime.llama_cpp.model import load_gguf
    from specdec.runtime.llama_cpp.tiny_model import write_tiny_quantized_gguf

    path = write_tiny_quantized_gguf(tmp_path / "tiny.gguf")
    ids = torch.arange(1, 12)
    plain = load_gguf(path, threads=1, context=64, huge_pages=False)
    expected = plain.rows([0]).feed([ids], last=len(ids))[0]
    plain.close()
    called = []
    monkeypatch.setattr(huge_pages, "thp_setting", lambda: "madvise")
    monkeypatch.setattr(huge_pages, "SMALLEST", 0)  # the tiny file's buffers are small

    def failing(regions):
        called.append(regions)
        raise OSError("no madvise here")

    monkeypatch.setattr(huge_pages, "advise", failing)
    asked = load_gguf(path, threads=1, context=64, huge_pages=True)
    try:
        assert len(called) == 1  # llama.cpp called back, once, before the first tensor; the failure was swallowed
        assert torch.equal(asked.rows([0]).feed([ids], last=len(ids))[0], expected)
    finally:
        asked.close()
