"""Measuring c and v(gamma) on the models as they run: a draft step, a target step, a verification pass over k tokens.

Notation: c = one draft step / one target step; v(gamma) = one target pass over gamma + 1 tokens / one
target step (`specdec.engine.costs.CostProfile`). Each is timed through the model's own runtime cache
(`specdec.engine.model`), with a prompt already cached, device synchronised, the median of a few
repetitions (rolled back after each, so the cache does not grow).

    profile = measure_costs(target, draft, input_ids, gammas=[2, 4, 8])    # transformers models or runtime models
    profile.c, profile.v(4)
    weight_cost_ratio(target, draft)                                       # c from the weights, nothing run
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import torch

from specdec.engine.contract import DraftCosts
from specdec.engine.costs import CostProfile
from specdec.engine.inputs import as_prompt
from specdec.engine.model import Rows
from specdec.engine.timing import synchronize
from specdec.runtime import as_model, is_model
from specdec.store.machine import BUSY_FROM, cpu_sample, others_busy, wait_policy_in_force


def _pass_time(rows: Rows, tokens: torch.Tensor, device: torch.device) -> float:
    """Seconds of one pass over `tokens` on top of the cached text (row 0), rolled back after it."""
    start_length = rows.length(0)
    synchronize(device)
    start = time.perf_counter()
    rows.feed([tokens], last=tokens.numel())
    synchronize(device)
    seconds = time.perf_counter() - start
    rows.rollback(0, start_length)
    return seconds


def _median_pass_time(rows: Rows, tokens: torch.Tensor, repeats: int, device: torch.device) -> float:
    """Median seconds of `repeats` passes over `tokens` on top of the cached prompt, after one that only warms up."""
    _pass_time(rows, tokens, device)
    return statistics.median(_pass_time(rows, tokens, device) for _ in range(repeats))


@torch.inference_mode()
def measure_costs(
    target: object,
    draft: object | None,
    input_ids: torch.Tensor,
    gammas: list[int],
    repeats: int = 5,
    draft_input_ids: torch.Tensor | None = None,
) -> CostProfile:
    """c and v(gamma) for `target` and `draft` (None: model-free, c = 0) after `input_ids`.

    A draft with another tokenizer reads the prompt as `draft_input_ids` (its own ids).
    """
    target, draft = as_model(target), None if draft is None else as_model(draft)
    prompt = as_prompt(input_ids).to(target.device)  # [T]
    continuation = prompt[-1:].repeat(max(gammas, default=1) + 1)  # any tokens will do for timing
    target_rows = target.rows([0])
    target_rows.feed([prompt[:-1] if prompt.numel() > 1 else prompt])
    target_step = _median_pass_time(target_rows, continuation[:1], repeats, target.device)
    verify = {
        gamma: _median_pass_time(target_rows, continuation[: gamma + 1], repeats, target.device)
        for gamma in sorted(set(gammas))
    }
    draft_step = 0.0
    if draft is not None:
        draft_prompt = prompt if draft_input_ids is None else as_prompt(draft_input_ids).to(draft.device)  # [T_draft]
        draft_rows = draft.rows([0])
        draft_rows.feed([draft_prompt[:-1] if draft_prompt.numel() > 1 else draft_prompt])
        draft_step = _median_pass_time(draft_rows, draft_prompt[-1:], repeats, draft.device)
    return CostProfile(target_step, draft_step, verify)


def weight_cost_ratio(target: object, draft: object | None) -> float:
    """c estimated without running anything: the draft's weight bytes over the target's (0 without a draft model).

    Decoding one token is bound by reading the weights on CPUs and GPUs alike, so this lands near
    the measured c (Qwen2.5-Coder 0.5B for 1.5B in bfloat16: 0.32 estimated, 0.3-0.45 measured).
    """
    if draft is None:
        return 0.0
    network = as_model(draft) if is_model(draft) else draft  # a model, or a drafter's own network (a head)
    return network.weight_bytes() / as_model(target).weight_bytes()


# the passes timed at load: enough for the round sizes a policy weighs (between: linear)
VERIFY_KS = (1, 2, 3, 4, 6, 8, 12, 16)
COSTS_FILE = "costs.json"  # in the store: measured costs per models, runtime, CPU and threads


@torch.inference_mode()
def time_costs(target: object, draft: object | None, ks: tuple[int, ...] = VERIFY_KS, steps: int = 3) -> CostProfile:
    """c and v(k) timed once, as a run would see them: a 32-token text cached, then the median of `steps` one-token
    steps of each model, of the draft's passes over two tokens (`CostProfile.catch_up`) and of `steps` passes over k + 1
    tokens for each k (about 110 target steps in all: 7 s for
    Qwen2.5-Coder-1.5B on llama.cpp on 2 quiet AVX2 cores); every pass rolled back."""
    target, draft = as_model(target), None if draft is None else as_model(draft)
    text = torch.arange(32, dtype=torch.long) % min(target.embedding_rows, 1000)  # any ids: timing does not read them
    rows = target.rows([0])
    rows.feed([text])  # warm: the cache holds a text
    step = _median_pass_time(rows, text[:1], steps, target.device)
    verify = {k: statistics.median(_pass_time(rows, text[: k + 1], target.device) for _ in range(steps)) for k in ks}
    draft_step = draft_pair = 0.0
    if draft is not None:
        draft_rows = draft.rows([0])
        draft_text = text % min(draft.embedding_rows, 1000)
        draft_rows.feed([draft_text])
        draft_step = _median_pass_time(draft_rows, draft_text[:1], steps, draft.device)
        draft_pair = _median_pass_time(draft_rows, draft_text[:2], steps, draft.device)  # its catch-up pass
    return CostProfile(step, draft_step, verify, draft_pair_s=draft_pair)


def measured_costs(
    target: object,
    draft: object | None,
    key: dict[str, object],
    ks: tuple[int, ...] = VERIFY_KS,
    timing: Callable[[], None] | None = None,
) -> CostProfile:
    """The costs kept in the store for `key` (the models, their runtime and precision, the CPU, the threads; this
    process's OpenMP wait policy is added), else timed now (`time_costs`) and kept with the conditions they were taken
    under: a machine pays for the timing once per pair and setting. A timing beside other work (`BUSY_FROM` cores or
    more of it, measured during the timing) is taken again once; still busy, it is used for this run and kept flagged,
    and the next load times it again. `timing()` is called just before a timing (to say so)."""
    from specdec.store import update_json

    path, entry = _kept_file(COSTS_FILE), _entry(key)
    found = _read(path).get(entry)
    timed_all = found is not None and set(ks) <= {int(k) for k in found["verify_s"]} and "draft_pair_s" in found
    if timed_all and not found.get("busy"):
        return _profile(found)
    if timing is not None:
        timing()
    for _ in range(2):
        profile, busy = _timed_with_load(target, draft, ks)
        if busy is None or busy < BUSY_FROM:  # quiet, or no way to know (no /proc/stat): kept as it is
            break
    measured = {
        "target_step_s": profile.target_step_s,
        "draft_step_s": profile.draft_step_s,
        "draft_pair_s": profile.draft_pair_s,
        "verify_s": {str(k): s for k, s in profile.verify_s.items()},
        "measured": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "others_busy_cores": busy,
        "busy": busy is not None and busy >= BUSY_FROM,
        "wait_policy": wait_policy_in_force(),
    }
    update_json(path, lambda kept: kept.__setitem__(entry, measured))  # under a lock: another job's entry stays
    return _profile(measured)


def forget_costs(key: dict[str, object]) -> None:
    """Drop the costs kept for `key` (as `measured_costs` keys them, this process's wait policy added): the next load of
    the pair times them again. What a run whose own passes disagree with them asks
    (`specdec.pair.measuring.recheck_costs`)."""
    from specdec.store import update_json

    path, entry = _kept_file(COSTS_FILE), _entry(key)
    if entry in _read(path):
        update_json(path, lambda kept: kept.pop(entry, None))


def _entry(key: dict[str, object]) -> str:
    """The name kept costs go by: `key` with this process's OpenMP wait policy, as sorted JSON."""
    return json.dumps(key | {"wait_policy": wait_policy_in_force()}, sort_keys=True)


def _kept_file(name: str) -> Path:
    from specdec.store import cache_dir

    return cache_dir() / name


def _read(path: Path) -> dict:
    """A kept JSON file's entries; none where it is missing or unreadable (it is written whole or not at all)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _timed_with_load(target: object, draft: object | None, ks: tuple[int, ...]) -> tuple[CostProfile, float | None]:
    """`time_costs`, and the cores' worth of other processes' work while it ran (None where unknown)."""
    before = cpu_sample()
    profile = time_costs(target, draft, ks)
    return profile, others_busy(before, cpu_sample())


def _profile(found: dict) -> CostProfile:
    """A kept entry as a `CostProfile`, with the conditions it was timed under in words."""
    busy = found.get("others_busy_cores")
    load = (
        "load unknown"
        if busy is None
        else (
            f"beside {busy:.1f} busy cores: flagged, timed again at the next load"
            if found.get("busy")
            else f"quiet ({busy:.2f} cores of other work)"
        )
    )
    under = (
        f"timed {found['measured']}, medians of 3, {load}, OpenMP wait {found.get('wait_policy') or 'not kept'}"
        if "measured" in found
        else "timed before conditions were kept"
    )
    return CostProfile(
        found["target_step_s"],
        found["draft_step_s"],
        {int(k): s for k, s in found["verify_s"].items()},
        under,
        found.get("draft_pair_s", 0.0),
    )


def draft_costs(profile: CostProfile, verify_slope: float, up_to: int = 64) -> DraftCosts:
    """The policy's costs from a measured profile: c, and v(0..up_to) made non-decreasing (a noisy table must not make
    one more token look free), linear between the timed k.

    >>> costs = draft_costs(CostProfile(0.1, 0.04, {1: 0.172, 2: 0.195, 4: 0.382, 6: 0.344}), 0.5, up_to=6)
    >>> round(costs.c, 2), [round(v, 3) for v in costs.verify]
    (0.4, [1.0, 1.72, 1.95, 2.885, 3.82, 3.82, 3.82])
    """
    verify = [1.0]
    for k in range(1, up_to + 1):
        verify.append(max(verify[-1], profile.v(k)))
    return DraftCosts(profile.c, verify_slope, tuple(verify), profile.catch_up)


# in the store: each way this machine ran a target, its step and v(k), for the planner
SPEEDS_FILE = "target-speeds.json"


def _speeds_key(target: str, threads: int | None) -> str:
    from specdec.store.machine import cpu_facts

    return f"{cpu_facts()['cpu']} | {target} | threads={threads}"


def keep_speed(target: str, option: str, threads: int | None, profile: CostProfile) -> None:
    """Keep what `profile` measured of `target` run as `option` ("llama.cpp", "torch w8a8") on this machine: the planner
    weighs the ways a target can run here by these (`specdec.planner.models`)."""
    from specdec.store import update_json

    measured = {
        "target_step_s": profile.target_step_s,
        "draft_step_s": profile.draft_step_s,
        "verify_s": {str(k): s for k, s in profile.verify_s.items()},
    }
    name = _speeds_key(target, threads)
    update_json(_kept_file(SPEEDS_FILE), lambda kept: kept.setdefault(name, {}).__setitem__(option, measured))


def kept_speeds(target: str, threads: int | None) -> dict[str, CostProfile]:
    """The ways this machine ran `target` (with `threads`), each
    as measured (`keep_speed`); empty where none was kept."""
    from specdec.store import cache_dir

    try:
        kept = json.loads((cache_dir() / SPEEDS_FILE).read_text()).get(_speeds_key(target, threads), {})
        return {
            option: CostProfile(
                found["target_step_s"], found["draft_step_s"], {int(k): v for k, v in found["verify_s"].items()}
            )
            for option, found in kept.items()
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}
