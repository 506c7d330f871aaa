"""Kept costs carry the conditions they were timed under: a timing beside a busy process is taken again, then flagged and
timed anew at the next load; a quiet one is reused; another OpenMP wait policy is timed anew (issue 57)."""

from __future__ import annotations

import json

import pytest

import specdec.runtime.costs as costs
from specdec.engine.costs import CostProfile
from specdec.store import cache_dir
from specdec.store.machine import others_busy

KEY = {"target": "t", "draft": "d", "runtime": "llama.cpp", "cpu": "a test CPU"}
PROFILE = CostProfile(0.05, 0.03, {k: 0.05 * (1 + k) for k in costs.VERIFY_KS})


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECDEC_CACHE", str(tmp_path))


def timings(monkeypatch, busy: float) -> list[int]:
    """Each timing made, by count; every one reports `busy` cores of other work."""
    made = []
    monkeypatch.setattr(costs, "_timed_with_load", lambda target, draft, ks: made.append(1) or (PROFILE, busy))
    return made


def test_a_quiet_timing_is_kept_with_its_conditions_and_reused(monkeypatch):
    made = timings(monkeypatch, 0.02)
    first = costs.measured_costs(None, None, KEY)
    assert len(made) == 1 and "quiet (0.02 cores of other work)" in first.measured_under and "medians of 3" in first.measured_under
    again = costs.measured_costs(None, None, KEY)
    assert len(made) == 1 and again.verify_s == first.verify_s                       # kept: not timed again
    kept = next(iter(json.loads((cache_dir() / costs.COSTS_FILE).read_text()).values()))
    assert kept["busy"] is False and kept["others_busy_cores"] == 0.02 and kept["measured"].endswith("UTC")


def test_a_busy_timing_is_taken_again_then_flagged_and_timed_anew_at_the_next_load(monkeypatch):
    made = timings(monkeypatch, 1.0)
    first = costs.measured_costs(None, None, KEY | {"pair": "busy"})
    assert len(made) == 2 and "beside 1.0 busy cores: flagged" in first.measured_under
    costs.measured_costs(None, None, KEY | {"pair": "busy"})
    assert len(made) == 4                                                            # flagged: never reused


def test_another_wait_policy_is_timed_anew(monkeypatch):
    made = timings(monkeypatch, 0.0)
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    costs.measured_costs(None, None, KEY | {"pair": "policy"})
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    costs.measured_costs(None, None, KEY | {"pair": "policy"})
    assert len(made) == 2


def test_other_processes_work_is_what_this_process_did_not_do():
    assert others_busy((10.0, 1.0, 0.0), (12.0, 2.0, 1.0)) == 1.0                    # 2 core-seconds, 1 of them ours
    assert others_busy((10.0, 1.0, 0.0), (12.0, 3.0, 1.0)) == 0.0                    # all of it ours
    assert others_busy((10.0, 1.0, 5.0), (12.0, 3.0, 5.0)) is None                   # no time passed
