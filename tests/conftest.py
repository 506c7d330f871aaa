"""Shared fixtures (tiny models built from configs, see tiny_models.py; nothing is downloaded) and the two tiers.

Plain `python -m pytest` runs the fast tier, the inner loop: unit tests, exact enumeration of the rule, greedy
equality on tiny models, the dashboard in-process. `python -m pytest --all` adds the slow tier: the statistical
tests (thousands of sampled runs against exact distributions, with their negative controls) and the tests that
drive a real browser. The README's test command and CI run `--all`.
"""

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")          # tests never reach for a model hub
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
if os.environ.get("PYTEST_XDIST_WORKER"):                # one of pytest-xdist's workers (pyproject.toml: -n auto):
    os.environ.setdefault("OMP_NUM_THREADS", "1")      # one thread each, so the workers share the cores instead of fighting


@pytest.fixture(scope="session")
def pairs():
    """(target, draft) per architecture, built once per test session (torch is imported only here)."""
    from tiny_models import tiny_pair

    return {architecture: tiny_pair(architecture) for architecture in ("gpt2", "llama", "qwen2")}


def pytest_xdist_auto_num_workers(config):
    """`-n auto` (pyproject.toml): one worker per core, at most 4 (each holds torch and transformers, about 0.6 GB)."""
    return max(1, min(os.cpu_count() or 1, 4))


def pytest_addoption(parser):
    parser.addoption("--all", action="store_true", default=False,
                     help="run every test: the slow tier too (statistical tests, the browser); plain runs are the fast tier")


def pytest_collection_modifyitems(config, items):
    """Without --all, leave out the slow tier: tests marked slow, and those that drive a browser."""
    if config.getoption("--all"):
        return
    slow = [item for item in items if item.get_closest_marker("slow") or item.get_closest_marker("browser")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if item not in set(slow)]
