"""Shared fixtures (tiny models built from configs, see tiny_models.py; nothing is downloaded) and the two tiers.

Plain `python -m pytest` runs the fast tier, the inner loop: unit tests, exact enumeration of the rule, greedy
equality on tiny models, the dashboard in-process. `python -m pytest --all` adds the slow tier: the statistical
tests (thousands of sampled runs against exact distributions, with their negative controls) and the tests that
drive a real browser. The README's test command and CI run `--all`.
"""

import os
import shutil
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # tests never reach for a model hub

_MADE_HERE = ""  # the suite's cache, when this process made it (removed at the end)
# The user's own cache, as it was before the suite: the suite must leave it as it found it (`pytest_sessionfinish`).
USER_CACHE = Path(os.environ.get("SPECDEC_CACHE") or Path.home() / ".cache" / "specdec").expanduser()
if os.environ.get("SPECDEC_REAL_MODELS") != "1":  # the opt-in real-model tests read the models the user fetched
    # Every test, and every process a test starts, sees an empty cache of the suite's own (one per run: xdist's workers
    # inherit the controller's), so no test passes or fails by what this machine downloaded, measured or kept.
    if not os.environ.get("SPECDEC_SUITE_CACHE"):
        os.environ["SPECDEC_SUITE_CACHE"] = _MADE_HERE = tempfile.mkdtemp(prefix="specdec-suite-cache-")
    os.environ["SPECDEC_CACHE"] = os.environ["SPECDEC_SUITE_CACHE"]
    # and what the processes the tests start keep for themselves (chromium's profile and crash reports, dconf) goes
    # there too
    os.environ["XDG_CONFIG_HOME"] = os.path.join(os.environ["SPECDEC_SUITE_CACHE"], "xdg-config")
    os.environ["XDG_CACHE_HOME"] = os.path.join(os.environ["SPECDEC_SUITE_CACHE"], "xdg-cache")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
if os.environ.get("PYTEST_XDIST_WORKER"):  # one of pytest-xdist's workers (pyproject.toml: -n auto):
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # one thread each, so the workers share the cores instead of fighting
    # and threads a test starts (llama.cpp's) sleep: the others work
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.pop("GOMP_SPINCOUNT", None)


@pytest.fixture(scope="session")
def pairs():
    """(target, draft) per architecture, built once per test session (torch is imported only here)."""
    from tiny_models import tiny_pair

    return {architecture: tiny_pair(architecture) for architecture in ("gpt2", "llama", "qwen2")}


def pytest_xdist_auto_num_workers(config):
    """`-n auto` (pyproject.toml): one worker per core, at most 4 (each holds torch and transformers, about 0.6 GB)."""
    return max(1, min(os.cpu_count() or 1, 4))


def pytest_addoption(parser):
    parser.addoption(
        "--all",
        action="store_true",
        default=False,
        help="run every test: the slow tier too (statistical tests, the browser); plain runs are the fast tier",
    )


def pytest_collection_modifyitems(config, items):
    """Without --all, leave out the slow tier: tests marked slow, and those that drive a browser."""
    if config.getoption("--all"):
        return
    slow = [item for item in items if item.get_closest_marker("slow") or item.get_closest_marker("browser")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if item not in set(slow)]


def cache_state(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under `root` with its size and modification time
    (nanoseconds): what a run of the suite must not change."""
    if not root.is_dir():
        return {}
    return {
        str(path.relative_to(root)): (stat.st_size, stat.st_mtime_ns)
        for path in root.rglob("*")
        if path.is_file() and (stat := path.stat())
    }


def home_entries() -> set[str]:
    """What the user's home, its .cache and its .config hold, by name (one level each): a suite that made something
    there wrote into the user's home."""
    home = Path.home()
    return {
        str(path.relative_to(home))
        for folder in (home, home / ".cache", home / ".config")
        if folder.is_dir()
        for path in folder.iterdir()
    }


_USER_CACHE_BEFORE = cache_state(USER_CACHE) if not os.environ.get("PYTEST_XDIST_WORKER") else {}
_HOME_BEFORE = home_entries() if not os.environ.get("PYTEST_XDIST_WORKER") else set()


def pytest_sessionfinish(session, exitstatus):
    """The suite leaves the user's files alone: a run that added, changed or removed a file under the user's cache, or
    made anything in the home, its .cache or .config, fails, naming it."""
    if _MADE_HERE:
        shutil.rmtree(_MADE_HERE, ignore_errors=True)
    if os.environ.get("PYTEST_XDIST_WORKER") or os.environ.get("SPECDEC_REAL_MODELS") == "1":
        return
    after = cache_state(USER_CACHE)
    changed = sorted(
        name for name in set(_USER_CACHE_BEFORE) | set(after) if _USER_CACHE_BEFORE.get(name) != after.get(name)
    )
    if changed:
        session.config.get_terminal_writer().line(
            f"the user's cache {USER_CACHE} changed during the suite (by a test, or by "
            f"another process beside it): {', '.join(changed[:5])}",
            red=True,
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    made = sorted(home_entries() - _HOME_BEFORE)
    if made:
        session.config.get_terminal_writer().line(
            f"{', '.join(made[:5])} appeared in the user's home {Path.home()} during the "
            "suite (made by a test, or by another process beside it)",
            red=True,
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
