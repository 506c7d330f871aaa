"""The prompt suite against a running vLLM server, at 1, 4 and 16 requests at once.

    levels = server_benchmark(ServerRun(url="http://127.0.0.1:8000", baseline_url="http://127.0.0.1:8001"))
    frame = with_vllm_speedups(pd.DataFrame(levels))        # one row per (server, concurrency)

What a serving engine does to the gain: one request alone has the machine to itself, and
speculation turns idle compute into tokens; with many requests the verification passes are already
batched, the compute is busy, and the gain shrinks (or turns into a loss). To see it, run the same
model twice, one server with a `--speculative-config` and one without (the baseline), and send each
the suite at every concurrency level: `concurrency` requests in flight at a time, at least one per
prompt and at least `concurrency` in all. Per level the spec server's counters (`/metrics`,
`specdec.bench.vllm.counters`) are read before and after; throughput is generated tokens / wall time.
The two servers take turns level by level (the order flips every level), so drift hits both alike.

The client speaks the OpenAI-compatible API vLLM serves (`/v1/models`, `/v1/chat/completions`),
with the standard library only. Every failure is one line: a server that is down, a model name the
server does not serve, a /metrics page without spec-decode counters.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from specdec.bench.prompts import BenchPrompt, suite
from specdec.bench.vllm.counters import SpecCounters, counters_from_prometheus
from specdec.bench.vllm.rows import SERVER_ENGINE, measures, stamp
from specdec.errors import SpecdecError

CONCURRENCY = (1, 4, 16)


class ServerClient:
    """A vLLM OpenAI-compatible server at `url` (http://host:port, with or without /v1)."""

    def __init__(self, url: str, timeout_s: float = 600.0) -> None:
        if not url.startswith(("http://", "https://")):
            raise SpecdecError(
                f"a server address starts with http:// or https://, got '{url}': pass --server http://127.0.0.1:8000"
            )
        self.url = url.rstrip("/").removesuffix("/v1")
        self.timeout_s = timeout_s

    def _request(self, path: str, body: dict | None = None) -> bytes:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                return response.read()
        except urllib.error.HTTPError as error:
            detail = error.read().decode(errors="replace")[:200].strip()
            raise SpecdecError(
                f"the server at {self.url} answered {error.code} to {path}: {_message(detail)}"
            ) from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise SpecdecError(
                f"could not reach a vLLM server at {self.url} ({reason}): start one with `vllm serve MODEL "
                "--speculative-config ...` (see the README), or fix --server"
            ) from None

    def _json(self, path: str, body: dict | None = None) -> dict:
        raw = self._request(path, body)
        try:
            answer = json.loads(raw)
        except json.JSONDecodeError:
            raise SpecdecError(
                f"the server at {self.url} did not answer {path} with JSON: is it a vLLM server?"
            ) from None
        if not isinstance(answer, dict):
            raise SpecdecError(
                f"the server at {self.url} answered {path} with {type(answer).__name__}, not an object: is it vLLM?"
            )
        return answer

    def models(self) -> list[str]:
        """The model names the server serves."""
        return [model.get("id", "") for model in self._json("/v1/models").get("data", [])]

    def model(self, wanted: str | None = None) -> str:
        """`wanted` if the server serves it, else its only model; otherwise one line naming what it serves."""
        served = self.models()
        if wanted is not None and wanted in served:
            return wanted
        if wanted is None and len(served) == 1:
            return served[0]
        raise SpecdecError(
            f"the server at {self.url} serves {served or 'no model'}, not '{wanted}': pass --server-model "
            f"{served[0] if served else 'NAME'}"
        )

    def counters(self, model: str | None = None) -> SpecCounters:
        """The spec-decode counters on its /metrics page."""
        return counters_from_prometheus(self._request("/metrics").decode(errors="replace"), model)

    def chat(self, model: str, prompt: BenchPrompt, max_tokens: int, temperature: float, seed: int) -> int:
        """One chat completion of `prompt`; the number of tokens generated (the server's own count)."""
        answer = self._json(
            "/v1/chat/completions",
            dict(
                model=model,
                messages=[{"role": role, "content": content} for role, content in prompt.messages],
                max_tokens=max_tokens,
                temperature=temperature,
                seed=seed,
            ),
        )
        tokens = answer.get("usage", {}).get("completion_tokens")
        if not isinstance(tokens, int):
            raise SpecdecError(
                f"the server at {self.url} gave no usage.completion_tokens: is it an OpenAI-compatible server?"
            )
        return tokens


def _message(detail: str) -> str:
    """The error message inside an OpenAI-style error body, else the body's first line."""
    try:
        error = json.loads(detail).get("error", detail)
        return str(error.get("message", error) if isinstance(error, dict) else error).splitlines()[0]
    except (json.JSONDecodeError, AttributeError, IndexError):
        return detail.splitlines()[0] if detail else "no detail"


def requests_for(prompts: Sequence[BenchPrompt], concurrency: int) -> list[BenchPrompt]:
    """The requests of one level: every prompt once, repeated round-robin until there are `concurrency` of them.

    >>> [p.id for p in requests_for(suite(["math"], 2), 5)]
    ['math-1', 'math-2', 'math-1', 'math-2', 'math-1']
    """
    count = max(len(prompts), concurrency)
    return [prompts[index % len(prompts)] for index in range(count)]


@dataclass(frozen=True)
class ServerRun:
    """One server experiment: the speculative server, an optional
    baseline (the same model, no speculation), the suite."""

    url: str
    baseline_url: str | None = None
    model: str | None = None  # None: the server's only model
    concurrency: tuple[int, ...] = CONCURRENCY
    categories: tuple[str, ...] | None = None
    prompts_per_category: int | None = 1
    max_new_tokens: int = 128
    temperature: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.concurrency or any(not isinstance(level, int) or level < 1 for level in self.concurrency):
            raise SpecdecError(
                f"concurrency levels are whole numbers >= 1, got {list(self.concurrency)}: pass --concurrency 1,4,16"
            )


def measure_level(
    client: ServerClient, model: str, requests: list[BenchPrompt], concurrency: int, run: ServerRun, speculative: bool
) -> dict:
    """Send `requests` with `concurrency` in flight; the level's row (counters read around it when `speculative`)."""
    before = client.counters(model) if speculative else SpecCounters()
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        tokens = list(
            pool.map(lambda prompt: client.chat(model, prompt, run.max_new_tokens, run.temperature, run.seed), requests)
        )
    wall = time.perf_counter() - start
    counters = client.counters(model).minus(before) if speculative else SpecCounters()
    return stamp(
        engine=SERVER_ENGINE,
        pair=f"{model} @ {client.url}",
        target=model,
        method="speculative" if speculative else "plain",
        schedule="server" if speculative else "none",
        category="all",
        prompt_id="suite",
        temperature=run.temperature,
        top_k=0,
        top_p=1.0,
        repeat=0,
        seed=run.seed,
        max_new_tokens=run.max_new_tokens,
        concurrency=concurrency,
        device=client.url,
    ) | measures(counters, sum(tokens), wall)


def server_benchmark(run: ServerRun, progress: Callable[[int, int, str], None] | None = None) -> list[dict]:
    """Every concurrency level on the speculative server and, when given, the baseline, taking turns (see the module).

    `progress(levels done, levels in all, message)`, as `specdec.bench.harness.run_benchmark` reports.
    """
    servers = [(ServerClient(run.url), True)] + ([(ServerClient(run.baseline_url), False)] if run.baseline_url else [])
    models = [client.model(run.model) for client, _ in servers]
    servers[0][0].counters(models[0])  # fail now, not after the first level, when the server does not speculate
    prompts = suite(run.categories, run.prompts_per_category)
    rows = []
    for index, level in enumerate(run.concurrency):
        order = list(zip(servers, models))
        for (client, speculative), model in order if index % 2 == 0 else order[::-1]:
            requests = requests_for(prompts, level)
            if progress is not None:
                progress(
                    len(rows),
                    len(run.concurrency) * len(servers),
                    f"{'speculative' if speculative else 'baseline'} server: {len(requests)} requests, {level} at a "
                    "time",
                )
            row = measure_level(client, model, requests, level, run, speculative)
            # one pair: plain and speculative rows
            rows.append(row | dict(pair=f"{models[0]} [vLLM server]", target=models[0]))
    if progress is not None:
        progress(len(rows), len(rows), "done")
    return rows
