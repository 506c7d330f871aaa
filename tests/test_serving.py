"""vLLM without vLLM: the server mode against a fake server on 127.0.0.1, the offline worker against a fake package.

What is checked: the client, the counter arithmetic (the fake server's counters are known in
advance), the concurrency (requests really overlap), the CSV rows, and one clear line for each
failure (server down, wrong model name, malformed metrics, vLLM missing). The real thing is the
opt-in `SPECDEC_VLLM=1` test at the end.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from fake_vllm import FAKE_VLLM, FakeServer
from test_cli import error_lines, run_cli

from specdec.bench.charts import benchmark_figures, summary_figure
from specdec.bench.tables import COLUMNS, load_csv
from specdec.bench.vllm.counters import SpecCounters, counters_from_prometheus
from specdec.bench.vllm.offline import VllmSettings, offline_rows, vllm_job
from specdec.bench.vllm.rows import with_vllm_speedups
from specdec.bench.vllm.server import ServerClient
from specdec.bench.vllm.worker_process import find_vllm_python, run_worker
from specdec.errors import SpecdecError

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_counters_follow_the_fake_servers_arithmetic():
    with FakeServer(gamma=4, accept=3) as server:
        client = ServerClient(server.url + "/v1")  # with or without /v1
        before = client.counters()
        client.chat("fake-model", _prompt(), max_tokens=40, temperature=0.0, seed=0)
        run = client.counters().minus(before)
    assert run == SpecCounters(drafts=10, draft_tokens=40, accepted=30, accepted_per_pos=(10, 10, 10, 0))
    assert run.acceptance_rate == 0.75 and run.mean_acceptance_length == 4.0
    assert run.alpha_estimate == 30 / (30 + 10)  # every round rejected its 4th token


def test_server_benchmark_rows_at_each_concurrency(tmp_path, capsys):
    with FakeServer(gamma=4, accept=3) as spec, FakeServer(mode="plain") as plain:
        code, out, err = run_cli(
            capsys,
            "bench",
            "--server",
            spec.url,
            "--baseline-server",
            plain.url,
            "--concurrency",
            "1,4,16",
            "--categories",
            "code,math",
            "--prompts-per-category",
            "1",
            "--max-new-tokens",
            "8",
            "--out",
            str(tmp_path / "server.csv"),
        )
        most_in_flight = spec.most_in_flight
        requests = spec.requests, plain.requests
    assert code == 0, err
    assert requests == (2 + 4 + 16, 2 + 4 + 16)  # max(prompts, concurrency) requests per level
    assert most_in_flight > 4  # the 16-level really had many requests at once
    frame = load_csv(tmp_path / "server.csv")
    assert list(frame.columns) == COLUMNS and set(frame["engine"]) == {"vllm-server"}
    speculative = frame[frame["method"] == "speculative"].set_index("concurrency")
    assert list(speculative.index) == [1, 4, 16]
    assert (speculative["acceptance_rate"] == 0.75).all() and (speculative["mean_acceptance_length"] == 4.0).all()
    assert list(speculative["new_tokens"]) == [16, 32, 128]  # 8 tokens per request
    assert speculative["speedup"].notna().all()  # over the baseline server at the same level
    assert frame[frame["method"] == "plain"]["speedup"].tolist() == [1.0, 1.0, 1.0]
    assert "per concurrency level" in out and "mean_acceptance_length" in out
    code, again, _ = run_cli(
        capsys, "bench", "--from-csv", str(tmp_path / "server.csv"), str(tmp_path / "server.csv"), "--markdown"
    )
    assert code == 0 and "per concurrency level" in again  # several CSVs read back as one table
    # both files' levels, and the overview
    assert again.count("| fake-model [vLLM server] | speculative |") == 2 * 3 + 1
    figure = benchmark_figures(frame)["concurrency"]  # the Compare page's chart of it
    speedups = [trace for trace in figure.data if trace.name.endswith("speedup")]
    assert (
        len(speedups) == 1 and list(speedups[0].x) == [1, 4, 16] and list(speedups[0].y) == list(speculative["speedup"])
    )


@pytest.mark.parametrize(
    "setup, fragment",
    [
        ("down", "could not reach a vLLM server at"),
        ("wrong-model", "serves ['fake-model'], not 'other': pass --server-model fake-model"),
        ("garbage", "is not Prometheus text (line 1"),
        ("no-spec", "has no vllm:spec_decode_num_drafts counter: start the vLLM server with --speculative-config"),
        ("not-a-url", "a server address starts with http://"),
    ],
)
def test_server_errors_are_one_line(capsys, setup, fragment):
    mode = {"garbage": "garbage", "no-spec": "plain"}.get(setup, "spec")
    with FakeServer(mode=mode) as server:
        url = {"down": f"http://127.0.0.1:{free_port()}", "not-a-url": "127.0.0.1:8000"}.get(setup, server.url)
        extra = ["--server-model", "other"] if setup == "wrong-model" else []
        code, out, err = run_cli(
            capsys,
            "bench",
            "--server",
            url,
            *extra,
            "--concurrency",
            "1",
            "--categories",
            "code",
            "--max-new-tokens",
            "4",
        )
        assert server.requests == 0  # found before any request was sent
    assert code == 2
    assert len(error_lines(err)) == 1 and fragment in err, err


def test_counters_that_go_down_mean_a_restart():
    with pytest.raises(SpecdecError, match="the server restarted"):
        SpecCounters(drafts=1, draft_tokens=4, accepted=3).minus(SpecCounters(drafts=5, draft_tokens=20, accepted=9))


def test_only_the_chosen_models_counters_are_read():
    page = "\n".join(
        f'vllm:spec_decode_num_{name}_total{{model_name="{model}"}} {value}'
        for model, scale in (("a", 1), ("b", 100))
        for name, value in (("drafts", 2 * scale), ("draft_tokens", 8 * scale), ("accepted_tokens", 5 * scale))
    )
    assert counters_from_prometheus(page, "a") == SpecCounters(drafts=2, draft_tokens=8, accepted=5)
    assert counters_from_prometheus(page).drafts == 202


@pytest.fixture
def fake_vllm_python(tmp_path, monkeypatch):
    """This Python, with a fake `vllm` package on its path (for find_vllm_python's check and for the worker)."""
    package = tmp_path / "fake" / "vllm"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(FAKE_VLLM)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path / "fake"), os.environ.get("PYTHONPATH", "")]))
    return Path(sys.executable)


def test_the_worker_runs_every_variant_and_the_rows_carry_the_counters(tmp_path, fake_vllm_python):
    target, draft = tmp_path / "target", tmp_path / "draft"
    target.mkdir(), draft.mkdir()
    prompts = [{"id": "code-1", "token_ids": [5, 6, 7]}, {"id": "math-1", "token_ids": [9]}]
    settings = VllmSettings(gammas=(4,), max_new_tokens=9)
    job = vllm_job(str(target), str(draft), True, prompts, settings)
    messages: list[str] = []
    records = run_worker(
        find_vllm_python(str(fake_vllm_python)),
        job,
        progress=lambda done, message: messages.append(message),
        environment=dict(os.environ),
    )
    assert [(r["variant"], r["prompt_id"]) for r in records] == [
        (v, p) for v in ("plain", "draft", "ngram") for p in ("code-1", "math-1")
    ]
    assert records[0]["token_ids"] == list(range(8, 17)) and any(
        "starting vLLM for draft gamma=4" in m for m in messages
    )
    rows = offline_rows(records, "d", "t", {"code-1": ("code", 3), "math-1": ("math", 1)}, settings, "0.0-fake")
    frame = with_vllm_speedups(pd.DataFrame(rows))
    speculative = frame[frame["method"] == "speculative"]
    assert set(speculative["pair"]) == {"d->t [vLLM]", "prompt-lookup->t [vLLM]"}
    # this prompt's own: 3 rounds of 4, 2 kept
    assert (speculative["drafted"] == 12).all() and (speculative["accepted"] == 6).all()
    assert (speculative["acceptance_rate"] == 0.5).all() and (speculative["mean_acceptance_length"] == 3.0).all()
    assert (speculative["matches_plain"] == 1.0).all() and frame["speedup"].notna().all()
    figures = benchmark_figures(frame)  # our charts draw vLLM's rows as pairs of their own
    assert "d->t [vLLM]: accepted / drafted" in {trace.name for trace in figures["acceptance"].data}
    assert "concurrency" not in figures and len(summary_figure(frame).data) > 0


def test_a_worker_failure_is_one_line_with_its_log(tmp_path, fake_vllm_python):
    job = vllm_job(str(tmp_path / "missing"), None, False, [{"id": "code-1", "token_ids": [1]}], VllmSettings())
    with pytest.raises(SpecdecError, match=r"vLLM failed: ValueError: no model folder at .*missing \(its log: "):
        run_worker(fake_vllm_python, job, environment=dict(os.environ))


def test_missing_vllm_says_how_to_get_it(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("SPECDEC_VLLM_PYTHON", raising=False)
    monkeypatch.chdir(tmp_path)  # no .venv-vllm here
    code, out, err = run_cli(capsys, "bench", "--engine", "vllm", "--pairs", "prompt-lookup->x")
    assert code == 2 and len(error_lines(err)) == 1
    assert "vLLM is not installed" in err and "pip install -r requirements-vllm.txt" in err
    code, out, err = run_cli(
        capsys, "bench", "--engine", "vllm", "--vllm-python", sys.executable, "--pairs", "prompt-lookup->x"
    )
    assert code == 2 and "cannot import vllm" in err
    code, out, err = run_cli(capsys, "bench", "--engine", "vllm", "--gammas", "stop", "--pairs", "prompt-lookup->x")
    assert code == 2 and "vLLM drafts a fixed number of tokens per round" in err


def _prompt():
    from specdec.bench.prompts import suite

    return suite(["code"], 1)[0]


@pytest.mark.real_models
@pytest.mark.skipif(
    os.environ.get("SPECDEC_VLLM") != "1",
    reason="runs vLLM's CPU build: set SPECDEC_VLLM=1 (see requirements-vllm.txt)",
)
def test_real_vllm_runs_the_zoo_pair_with_draft_and_ngram(tmp_path):
    """vLLM's CPU build runs the zoo pair with draft-model and n-gram speculation on two prompts, through the CLI."""
    from real_models import fetch_zoo

    fetch_zoo("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")
    out = tmp_path / "vllm.csv"
    command = [
        sys.executable,
        "-m",
        "specdec",
        "bench",
        "--engine",
        "vllm",
        "--pairs",
        "qwen2.5-coder-0.5b->qwen2.5-coder-1.5b",
        "prompt-lookup->qwen2.5-coder-1.5b",
        "--categories",
        "code,summarization",
        "--prompts-per-category",
        "1",
        "--gammas",
        "5",
        "--max-new-tokens",
        "64",
        "--out",
        str(out),
    ]
    finished = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=3600)
    assert finished.returncode == 0, finished.stderr[-2000:]
    frame = load_csv(out)
    speculative = frame[frame["method"] == "speculative"]
    assert set(speculative["pair"]) == {
        "qwen2.5-coder-0.5b->qwen2.5-coder-1.5b [vLLM]",
        "prompt-lookup->qwen2.5-coder-1.5b [vLLM]",
    }
    assert (
        len(speculative) == 4
        and (speculative["drafted"] > 0).all()
        and speculative["acceptance_rate"].between(0, 1).all()
    )
    print(
        json.dumps(
            frame[
                ["pair", "method", "prompt_id", "tokens_per_second", "acceptance_rate", "speedup", "matches_plain"]
            ].to_dict("records"),
            indent=1,
        )
    )
