"""Benchmarking vLLM, the serving engine users grow into: the same experiments, the same rows.

`specdec` measures one sequence on one machine; vLLM runs speculative decoding (a draft model,
n-gram lookup, EAGLE, MTP heads) for many requests at once. This package runs the benchmark's prompt
suite on vLLM and writes rows in the benchmark's CSV schema (`specdec.bench.tables.COLUMNS`, with
`engine` = "vllm"), so the Compare page and `specdec bench` chart both engines side by side.

- `counters`: vLLM's spec-decode counters (Prometheus text or `LLM.get_metrics()`), their
  differences, and the acceptance measures they give (pure arithmetic, no I/O)
- `server`: a client of a running vLLM OpenAI-compatible server; the prompt suite at 1, 4 and 16
  concurrent requests, with the counters read before and after each level
- `offline`: vLLM's offline `LLM` in a separate Python environment (vLLM pins other transformers
  versions than the app), driven through `worker.py` (a script run with vLLM's Python) one
  JSON line at a time; `worker_process`: finding that Python and running the worker
- `rows`: both modes' measurements as benchmark rows, and speedups over vLLM's own plain decoding

vLLM is an optional extra (`requirements-vllm.txt`): nothing here imports it.
"""
