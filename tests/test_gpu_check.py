"""benchmarks/gpu_check.py, the prepared run for a GPU machine, dry-run here on the CPU: its exactness part passes, its
negative controls are caught, and it writes its report (the speed part needs the real pair and is left out)."""

import importlib.util
import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # about 20 s: 3,000 rows at five settings

_spec = importlib.util.spec_from_file_location(
    "gpu_check", Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_check.py"
)
gpu_check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpu_check)


def test_the_exactness_part_passes_and_catches_both_broken_rules(tmp_path, monkeypatch):
    assert gpu_check.main(["--device", "cpu", "--skip-speed", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert len(report["greedy"]) == 12 and all(check["equal"] and check["accepted"] > 0 for check in report["greedy"])
    broken = [check for check in report["sampled"] if check["rule"].startswith("broken")]
    assert len(broken) == 2 and all(check["p_value"] < 1e-3 for check in broken)
    assert "| broken: skip_the_residual | t1.0 |" in (tmp_path / "report.md").read_text()
    monkeypatch.setattr(
        gpu_check,
        "greedy_checks",
        lambda device: [{"architecture": "gpt2", "gamma": 1, "equal": False, "accepted": 1, "drafted": 2}],
    )
    monkeypatch.setattr(gpu_check, "sampled_checks", lambda device, runs: report["sampled"])  # as measured above
    # one unequal greedy run: exit 1
    assert gpu_check.main(["--device", "cpu", "--skip-speed", "--out", str(tmp_path)]) == 1
