"""The benchmark layer: measuring speculative decoding against the target alone and against transformers.

It runs the engine on loaded pairs (`specdec.pair`) and turns the runs into tables, charts
and verdicts; the engine never imports it. One module per concern:

- `prompts`: the built-in prompt suite, by category
- `settings`: what to run (`BenchSettings`, `Run`)
- `harness`: in which order, one row per run (`run_benchmark`); `row`: one run's row
- `hf_baselines`: transformers' `generate` and assisted generation, timed the same way
- `tables`: the rows' columns, the CSV round trip and the summaries people read
- `charts`: Plotly figures of a benchmark frame (the Compare page and `specdec bench --figure`); against gamma
  (`gamma_charts`), under load (`load_charts`); alpha at each position of a round (`position_acceptance`)
- `comparison`: one speculative run judged against one plain run (speedup, time split, greedy check)
- `vllm/`: the same prompt suite on vLLM, offline and against a running server, as rows of the same CSV

Not handled here: loading models (`specdec.zoo`), the algorithm itself (the engine).
"""
