"""Stand-ins for vLLM, for tests that must not need it: a small server and a tiny `vllm` package.

`FakeServer` speaks the three endpoints `specdec.bench.vllm.server` reads (`/v1/models`,
`/v1/chat/completions`, `/metrics`) on 127.0.0.1. Each completion "drafts" in rounds of `gamma`
tokens and accepts a fixed pattern, so the counters after a run are known in advance:

    per request: rounds = max_tokens // (accept + 1), every round accepts `accept` of `gamma` drafted tokens

`FAKE_VLLM` is the source of a `vllm` package with `LLM`, `SamplingParams` and `get_metrics()`,
enough for `worker.py` to run end to end (its "generation" counts up from the last prompt token).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeServer:
    """A vLLM-like server. `mode`: "spec" (counters), "plain" (no spec counters), "garbage" (a broken /metrics)."""

    def __init__(
        self, model: str = "fake-model", mode: str = "spec", gamma: int = 4, accept: int = 3, max_requests: int = 400
    ) -> None:
        self.model, self.mode, self.gamma, self.accept, self.max_requests = model, mode, gamma, accept, max_requests
        self.lock = threading.Lock()
        self.drafts = self.accepted = self.requests = 0
        self.per_pos = [0] * gamma
        self.in_flight = self.most_in_flight = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def _send(self, code: int, body: str, kind: str = "application/json") -> None:
                data = body.encode()
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/v1/models":
                    self._send(200, json.dumps({"object": "list", "data": [{"id": server.model, "object": "model"}]}))
                elif self.path == "/metrics":
                    self._send(200, server.metrics(), "text/plain; version=0.0.4")
                else:
                    self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}))

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path != "/v1/chat/completions":
                    self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}))
                    return
                if body.get("model") != server.model:
                    self._send(
                        404, json.dumps({"error": {"message": f"The model `{body.get('model')}` does not exist."}})
                    )
                    return
                self._send(200, json.dumps(server.complete(body["max_tokens"])))

        self.http = _Listening(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)

    def __enter__(self) -> FakeServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.http.shutdown()
        self.http.server_close()

    def complete(self, max_tokens: int) -> dict:
        with self.lock:
            self.requests += 1
            if self.requests > self.max_requests:
                raise RuntimeError("the fake server's request budget is spent")
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        threading.Event().wait(0.02)  # long enough for concurrent requests to overlap
        with self.lock:
            self.in_flight -= 1
            if self.mode == "spec":
                rounds = max_tokens // (self.accept + 1)
                self.drafts += rounds
                self.accepted += rounds * self.accept
                for position in range(self.accept):
                    self.per_pos[position] += rounds
        return {
            "choices": [{"message": {"role": "assistant", "content": "x" * max_tokens}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": max_tokens, "total_tokens": 10 + max_tokens},
        }

    def metrics(self) -> str:
        if self.mode == "garbage":
            return "<html>this is not prometheus</html>\n"
        lines = [
            "# HELP vllm:num_requests_running Number of requests.",
            "# TYPE vllm:num_requests_running gauge",
            f'vllm:num_requests_running{{engine="0",model_name="{self.model}"}} 0.0',
        ]
        if self.mode == "spec":
            labels = f'engine="0",model_name="{self.model}"'
            lines += [
                f"vllm:spec_decode_num_drafts_total{{{labels}}} {float(self.drafts)}",
                f"vllm:spec_decode_num_draft_tokens_total{{{labels}}} {float(self.drafts * self.gamma)}",
                f"vllm:spec_decode_num_accepted_tokens_total{{{labels}}} {float(self.accepted)}",
            ]
            lines += [
                f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels},position="{p}"}} {float(n)}'
                for p, n in enumerate(self.per_pos)
            ]
        return "\n".join(lines) + "\n"


FAKE_VLLM = '''
"""A fake vllm for tests: LLM.generate counts up from the last prompt token; drafts accept 2 of every gamma."""
__version__ = "0.0-fake"


class SamplingParams:
    def __init__(self, temperature=0.0, max_tokens=16, seed=0):
        self.max_tokens = max_tokens


class _Counter:
    def __init__(self, name, value):
        self.name, self.value = name, value


class _Vector:
    def __init__(self, name, values):
        self.name, self.values = name, values


class _Completion:
    def __init__(self, token_ids):
        self.token_ids = token_ids


class _Output:
    def __init__(self, token_ids):
        self.outputs = [_Completion(token_ids)]


class LLM:
    def __init__(self, model, speculative_config=None, **kwargs):
        import os
        if not os.path.isdir(model):
            raise ValueError(f"no model folder at {model}")
        self.spec = speculative_config
        self.drafts = self.accepted = 0

    def generate(self, prompts, params, use_tqdm=False):
        outputs = []
        for prompt in prompts:
            last = prompt["prompt_token_ids"][-1]
            outputs.append(_Output([last + 1 + i for i in range(params.max_tokens)]))
            if self.spec is not None:
                rounds = params.max_tokens // 3
                self.drafts += rounds
                self.accepted += 2 * rounds
        return outputs

    def get_metrics(self):
        if self.spec is None:
            return [_Counter("vllm:num_preemptions", 0)]
        gamma = self.spec["num_speculative_tokens"]
        per_pos = [self.drafts, self.drafts] + [0] * (gamma - 2)
        return [_Counter("vllm:spec_decode_num_drafts", self.drafts),
                _Counter("vllm:spec_decode_num_draft_tokens", self.drafts * gamma),
                _Counter("vllm:spec_decode_num_accepted_tokens", self.accepted),
                _Vector("vllm:spec_decode_num_accepted_tokens_per_pos", per_pos)]
'''


class _Listening(ThreadingHTTPServer):
    """A server whose listen queue holds a benchmark's 16 simultaneous connections (the default holds 5: on a busy
    machine the 6th was reset before the accepting thread got to it, and the benchmark failed)."""

    request_queue_size = 64
