"""vLLM's own Python environment, and the worker (`worker.py`) run as a process of it: one JSON job in, JSON lines out.

vLLM pins other transformers versions than the app, so it lives in its own environment (`requirements-vllm.txt`):
`find_vllm_python` finds that environment's Python (or says in one line how to get it), `worker_environment` gives the
worker vLLM's CPU settings, and `run_worker` runs one job and returns its rows, or fails in one line pointing at the
log.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from specdec.errors import SpecdecError

WORKER = Path(__file__).with_name("worker.py")
DEFAULT_VENV = ".venv-vllm"
INSTALL = (
    f"python -m venv {DEFAULT_VENV} && {DEFAULT_VENV}/bin/pip install -r requirements-vllm.txt (its own environment: "
    "vLLM pins other library versions than the app), or point SPECDEC_VLLM_PYTHON at a Python that has vLLM"
)


def find_vllm_python(explicit: str | None = None) -> Path:
    """The Python that runs vLLM: `explicit`, else $SPECDEC_VLLM_PYTHON, else .venv-vllm/bin/python here.

    It must import vllm; if it does not, one line says how to get it.
    """
    candidate = explicit or os.environ.get("SPECDEC_VLLM_PYTHON") or str(Path(DEFAULT_VENV) / "bin" / "python")
    path = Path(candidate)
    if not path.exists():
        raise SpecdecError(f"vLLM is not installed ({candidate} does not exist): {INSTALL}")
    check = subprocess.run([str(path), "-c", "import vllm"], capture_output=True, text=True)
    if check.returncode != 0:
        raise SpecdecError(f"{candidate} cannot import vllm ({_last_line(check.stderr)}): {INSTALL}")
    return path


def worker_environment(python: Path, threads: int | None = None) -> dict[str, str]:
    """vLLM's CPU settings: its threads bound to our cores and its
    Intel OpenMP preloaded (`run_worker` sets the KV-cache size)."""
    environment = dict(os.environ)
    cores = threads or os.cpu_count() or 1
    environment.setdefault("VLLM_CPU_OMP_THREADS_BIND", f"0-{cores - 1}")  # its automatic binding used one core
    iomp = python.parent.parent / "lib" / "libiomp5.so"
    if iomp.exists():
        environment.setdefault("LD_PRELOAD", str(iomp))
    return environment


def run_worker(
    python: Path,
    job: dict,
    progress: Callable[[int, str], None] | None = None,
    worker: Path = WORKER,
    environment: dict[str, str] | None = None,
) -> list[dict]:
    """Run `worker.py` on `job`; its "row" events, in order. A failure is one line, pointing at the log.

    `progress(rows so far, message)` hears every progress event of the worker.
    """
    log = Path(tempfile.mkstemp(prefix="specdec-vllm-", suffix=".log")[1])
    environment = dict(environment or worker_environment(python))
    environment.setdefault("VLLM_CPU_KVCACHE_SPACE", str(job.get("kv_cache_gib", 4)))
    rows, error = [], None
    with open(log, "w") as stderr:
        process = subprocess.Popen(
            [str(python), str(worker)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env=environment,
        )
        try:
            process.stdin.write(json.dumps(job))
            process.stdin.close()
            for line in process.stdout:
                event = _event(line)
                if event is None:
                    continue
                if event["event"] == "row":
                    rows.append(event)
                elif event["event"] == "progress" and progress is not None:
                    progress(len(rows), event["message"])
                elif event["event"] == "error":
                    error = event["message"]
            code = process.wait()
        except BaseException:  # a Stop or Ctrl-C: the engine must not outlive the run
            process.kill()
            process.wait()
            raise
    if error is not None or code != 0:
        raise SpecdecError(
            f"vLLM failed: {error or _last_line(log.read_text()) or f'exit code {code}'} (its log: {log})"
        )
    log.unlink()
    return rows


def _event(line: str) -> dict | None:
    try:
        event = json.loads(line)
    except json.JSONDecodeError:
        return None
    return event if isinstance(event, dict) and "event" in event else None


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""
