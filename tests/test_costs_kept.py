"""Kept costs carry the conditions they were timed under: a timing beside a busy process is taken again, then flagged
and timed anew at the next load; a quiet one is reused; another OpenMP wait policy is timed anew (issue 57)."""

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
    assert (
        len(made) == 1
        and "quiet (0.02 cores of other work)" in first.measured_under
        and "medians of 3" in first.measured_under
    )
    again = costs.measured_costs(None, None, KEY)
    assert len(made) == 1 and again.verify_s == first.verify_s  # kept: not timed again
    kept = next(iter(json.loads((cache_dir() / costs.COSTS_FILE).read_text()).values()))
    assert kept["busy"] is False and kept["others_busy_cores"] == 0.02 and kept["measured"].endswith("UTC")


def test_a_busy_timing_is_taken_again_then_flagged_and_timed_anew_at_the_next_load(monkeypatch):
    made = timings(monkeypatch, 1.0)
    first = costs.measured_costs(None, None, KEY | {"pair": "busy"})
    assert len(made) == 2 and "beside 1.0 busy cores: flagged" in first.measured_under
    costs.measured_costs(None, None, KEY | {"pair": "busy"})
    assert len(made) == 4  # flagged: never reused


def test_another_wait_policy_is_timed_anew(monkeypatch):
    made = timings(monkeypatch, 0.0)
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    costs.measured_costs(None, None, KEY | {"pair": "policy"})
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    costs.measured_costs(None, None, KEY | {"pair": "policy"})
    assert len(made) == 2


def test_other_processes_work_is_what_this_process_did_not_do():
    assert others_busy((10.0, 1.0, 0.0), (12.0, 2.0, 1.0)) == 1.0  # 2 core-seconds, 1 of them ours
    assert others_busy((10.0, 1.0, 0.0), (12.0, 3.0, 1.0)) == 0.0  # all of it ours
    assert others_busy((10.0, 1.0, 5.0), (12.0, 3.0, 5.0)) is None  # no time passed


def test_a_run_whose_passes_disagree_by_more_than_a_fifth_forgets_the_kept_costs(monkeypatch):
    from types import SimpleNamespace

    from specdec.pair.measuring import recheck_costs

    made = timings(monkeypatch, 0.0)
    kept = costs.measured_costs(None, None, KEY | {"pair": "recheck"})
    rounds = [SimpleNamespace(drafted=(), verify_s=1.0)] + [
        SimpleNamespace(drafted=(1, 2), verify_s=kept.verify_s[2])
    ] * 3
    pair = SimpleNamespace(costs=kept, cost_key=KEY | {"pair": "recheck"}, costs_off=None)
    recheck_costs(pair, SimpleNamespace(rounds=rounds))  # as predicted: kept
    assert pair.costs_off is None and costs.measured_costs(None, None, pair.cost_key) and len(made) == 1
    slower = [rounds[0]] + [SimpleNamespace(drafted=(1, 2), verify_s=kept.verify_s[2] * 1.15)] * 3
    recheck_costs(pair, SimpleNamespace(rounds=slower))  # 15% off: within the fifth
    assert pair.costs_off is None
    slower = [rounds[0]] + [SimpleNamespace(drafted=(1, 2), verify_s=kept.verify_s[2] * 1.3)] * 3
    recheck_costs(pair, SimpleNamespace(rounds=slower))  # 30% off: forgotten
    assert {passes: round(ratio, 2) for passes, ratio in pair.costs_off.items()} == {"target": 1.3}
    costs.measured_costs(None, None, pair.cost_key)
    assert len(made) == 2  # timed again at the next load


def test_a_run_whose_draft_passes_disagree_forgets_the_kept_costs_and_says_so(monkeypatch):
    from types import SimpleNamespace as Timed

    from specdec.pair.measuring import recheck_costs

    made = timings(monkeypatch, 0.0)
    kept = costs.measured_costs(None, None, KEY | {"pair": "draft"})
    target_pass = kept.verify_s[2]  # each round drafts 2 and its target pass takes what the kept costs predict

    def run(draft_s: float, c: float = kept.c, tree=None):
        chain = Timed(drafted=(1, 2), accepted=1, verify_s=target_pass, draft_s=draft_s, tree=tree)
        first = Timed(drafted=(1, 2), accepted=1, verify_s=target_pass, draft_s=1.0, tree=None)  # reads the prompt
        return Timed(rounds=[Timed(drafted=(), verify_s=1.0), first, chain, chain], draft_cost_ratio=c)

    pair = Timed(costs=kept, cost_key=KEY | {"pair": "draft"}, costs_off=None)
    recheck_costs(pair, run(2 * kept.draft_step_s * 1.1))  # 10% slower than two draft steps: kept
    assert pair.costs_off is None and len(made) == 1
    recheck_costs(pair, run(2 * kept.draft_step_s * 1.5, c=0.0))  # drafted without the draft model: not its timing
    recheck_costs(pair, run(2 * kept.draft_step_s * 1.5, tree=object()))  # a tree's rounds are not one step a token
    assert pair.costs_off is None and len(made) == 1
    recheck_costs(pair, run(2 * kept.draft_step_s * 1.5))  # half again as slow: forgotten, and said
    assert {passes: round(ratio, 2) for passes, ratio in pair.costs_off.items()} == {"draft": 1.5}
    costs.measured_costs(None, None, pair.cost_key)
    assert len(made) == 2


def test_a_machine_that_cannot_say_its_load_keeps_its_timing_unflagged(monkeypatch):
    made = timings(monkeypatch, None)  # no /proc/stat (macOS)
    first = costs.measured_costs(None, None, KEY | {"pair": "unknown"})
    costs.measured_costs(None, None, KEY | {"pair": "unknown"})
    assert len(made) == 1 and "load unknown" in first.measured_under


def test_specdec_run_says_which_passes_disagreed_with_the_kept_costs():
    from types import SimpleNamespace

    from specdec.cli.run import _measured_lines

    pair = SimpleNamespace(costs=PROFILE, costs_off={"draft": 1.5}, draft=None)
    lines = _measured_lines(pair, SimpleNamespace(verify_costs=(1.0, 2.0, 3.0)))
    assert "This run's draft passes took 1.50x what the kept costs predict: they are timed again at the next load" in (
        lines
    )
    agreed = SimpleNamespace(costs=PROFILE, costs_off=None, draft=None)
    assert not any("took" in line for line in _measured_lines(agreed, SimpleNamespace(verify_costs=(1.0, 2.0))))


def test_the_costs_time_the_drafts_two_token_pass_and_price_it_as_its_catch_up():
    from transformers import LlamaConfig, LlamaForCausalLM

    tiny = LlamaForCausalLM(
        LlamaConfig(hidden_size=8, intermediate_size=8, num_hidden_layers=1, num_attention_heads=1, vocab_size=16)
    )
    profile = costs.time_costs(tiny, tiny, ks=(1, 2), steps=1)
    assert profile.draft_pair_s > 0 and profile.draft_step_s > 0
    assert costs.draft_costs(profile, 0.5).catch_up == profile.catch_up
    assert CostProfile(0.1, 0.02, {}, draft_pair_s=0.05).catch_up == pytest.approx(0.3)  # 30 ms over a 100 ms step
    assert CostProfile(0.1, 0.02, {}).catch_up == 0.0  # not timed: nothing priced


def _keep_speeds(cache: str, option: str, count: int) -> None:
    import os

    os.environ["SPECDEC_CACHE"] = cache
    for i in range(count):
        costs.keep_speed(f"target-{i}", option, 2, PROFILE)


def test_two_jobs_keeping_costs_at_once_lose_nothing(monkeypatch, tmp_path):
    """Two processes and two threads keep speeds and costs into the same files at once: every entry survives (each
    read-change-write holds the file's lock; `specdec.store.update_json`)."""
    import multiprocessing
    import threading

    timings(monkeypatch, 0.0)
    jobs = [
        multiprocessing.get_context("spawn").Process(target=_keep_speeds, args=(str(tmp_path), o, 15)) for o in "ab"
    ]
    jobs += [threading.Thread(target=_keep_speeds, args=(str(tmp_path), o, 15)) for o in "cd"]
    jobs += [threading.Thread(target=costs.measured_costs, args=(None, None, KEY | {"target": t})) for t in "xyz"]
    for job in jobs:
        job.start()
    for job in jobs:
        job.join()
    speeds = json.loads((tmp_path / costs.SPEEDS_FILE).read_text())
    assert len(speeds) == 15 and all(set(options) == set("abcd") for options in speeds.values())
    assert len(json.loads((tmp_path / costs.COSTS_FILE).read_text())) == 3
