"""Compare: benchmark several pairs across a range of gamma and prompt categories; charts, table and CSV."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import streamlit as st

from pages.common import fetch_models, load_pair, shows_errors
from pages.common.models import missing_models
from pages.common.settings import CUSTOM, Settings
from pages.common.sidebar import current_settings, pair_label
from pages.common.state import is_kept, keep, kept, remember
from pages.common.turns import shared_turns, waiting_note
from specdec.bench import harness, tables
from specdec.bench.batches import batch_benchmark, batch_table
from specdec.bench.charts import batch_figure, benchmark_figures, has_batches
from specdec.bench.gammas import gamma_labels
from specdec.bench.harness import FAMILIES, BenchSettings
from specdec.bench.prompts import CATEGORIES
from specdec.bench.spec_bench import LEADERBOARD, SETTING, families_figures, families_table
from specdec.bench.vllm.offline import VllmSettings, find_vllm_python, run_vllm_benchmark
from specdec.bench.vllm.rows import with_vllm_speedups
from specdec.bench.vllm.server import CONCURRENCY, ServerRun, server_benchmark
from specdec.zoo.catalog import PAIRS, split_pair_name

settings = current_settings()
FRAME, NOTE = "compare_frame", "compare_note"


def _pair_settings(name: str) -> Settings:
    """The sidebar's settings with the pair `name` ('draft->target', curated or custom)."""
    if name in PAIRS:
        return replace(settings, pair=name)
    draft, target = split_pair_name(name)
    return replace(settings, pair=CUSTOM, custom_draft=draft, custom_target=target)


def _choose_pairs() -> list[str]:
    """The pairs to compare, picked in the sidebar (the current custom pair can join the curated ones)."""
    options = list(PAIRS) + ([settings.pair_name] if settings.pair == CUSTOM and settings.draft and settings.target else [])
    if is_kept("compare_pairs"):   # drop pairs that are gone (a custom pair that was changed)
        keep("compare_pairs", [name for name in kept("compare_pairs") if name in options])
    default = [settings.pair_name] if settings.pair_name in options else []
    with st.sidebar:
        st.subheader("Pairs to compare")
        return st.multiselect("Pairs", options, format_func=lambda name: pair_label(name) if name in PAIRS else f"custom: {name}",
                              label_visibility="collapsed", **remember("compare_pairs", default or [options[0]]))


def _bench_settings(gammas: tuple[int, int], stop: bool, adaptive: bool, assisted: bool, tree: bool, categories: list[str],
                    per_category: int, repeats: int, families: bool = False) -> BenchSettings:
    methods = ("speculative", "assisted") if assisted else ("speculative",)
    return BenchSettings(methods=tuple(dict.fromkeys(methods + (FAMILIES if families else ()))),
                         gammas=gamma_labels(range(gammas[0], gammas[1] + 1), stop=stop, adaptive=adaptive,
                                             tree_budget=settings.tree_budget if tree else None, default=families),
                         categories=tuple(categories), prompts_per_category=per_category,
                         decoding=settings.decoding, repeats=repeats)


def run_comparison(pairs: list[str], bench_settings: BenchSettings) -> None:
    """Benchmark each pair in turn; every finished run is kept, whatever interrupts the rest.

    A Stop click reaches this script as an exception from its next Streamlit call (the progress
    bar's update, inside the benchmark). The rows are collected as they are measured and saved
    in `finally`, so the exception can go on to stop or rerun the page without taking them along.
    """
    frames: list[pd.DataFrame] = []
    st.session_state[NOTE] = None
    bar = st.progress(0.0, text="starting")
    for index, name in enumerate(pairs):
        rows: list[dict] = []
        try:
            with shows_errors():
                pair = load_pair(_pair_settings(name))

                def report(done: int, total: int, message: str, index: int = index) -> None:
                    fraction = (index + done / max(total, 1)) / len(pairs)
                    bar.progress(fraction, text=f"{message} ({done}/{total} runs of this pair)")

                harness.run_benchmark([pair], bench_settings, progress=report, on_row=rows.append)
        except Exception:
            raise
        except BaseException:   # Streamlit's stop or rerun request, or Ctrl-C: keep what is done, then let it through
            st.session_state[NOTE] = f"Stopped early: the {sum(map(len, frames)) + len(rows)} runs finished so far are kept."
            raise
        finally:
            frames.append(harness.rows_to_frame(rows))
            st.session_state[FRAME] = pd.concat(frames, ignore_index=True)
    bar.progress(1.0, text="done")


def run_batch_comparison(pairs: list[str], sizes: list[int]) -> None:
    """Each pair's plain and speculative throughput at each batch size, on the same prompts (`specdec.bench.batches`)."""
    st.session_state[NOTE] = None
    frames: list[pd.DataFrame] = []
    bar = st.progress(0.0, text="starting")
    for index, name in enumerate(pairs):
        pair = load_pair(_pair_settings(name))

        def report(done: int, total: int, message: str, index: int = index) -> None:
            bar.progress(min((index + done / max(total, 1)) / len(pairs), 1.0), text=f"{name}: {message} ({done}/{total})")

        frames.append(batch_benchmark(pair, sorted(sizes), settings.decoding, progress=report))
        st.session_state[FRAME] = pd.concat(frames, ignore_index=True)
    bar.progress(1.0, text="done")


def show_batches(frame: pd.DataFrame) -> None:
    """Throughput and the speculative gain against batch size (a vLLM server's gain against requests in flight beside it)."""
    st.subheader("Batches")
    st.caption("The same prompts at every batch size. Throughput: all new tokens over wall time; gain: speculative over plain "
               "decoding of the same batch; exact: every row's greedy tokens equal the target alone's. A vLLM server's CSV "
               "uploaded below draws its gain against requests in flight on the same chart.")
    st.dataframe(batch_table(frame).round(2), hide_index=True, width="stretch")
    figure = batch_figure(frame).update_layout(height=460, legend=dict(orientation="h", yanchor="top", y=-0.25))
    st.plotly_chart(figure, width="stretch", key="chart_batches")


def _progress_reporter(bar):
    """A progress callback (done, total, message) that moves `bar`."""
    def report(done: int, total: int, message: str) -> None:
        bar.progress(min(done / max(total, 1), 1.0), text=f"{message} ({done}/{total})")
    return report


def run_vllm_comparison(pairs: list[str], vllm_settings: VllmSettings) -> None:
    """The pairs through vLLM's offline engine, in its own environment (one line when it is missing)."""
    st.session_state[NOTE] = None
    python = find_vllm_python()
    bar = st.progress(0.0, text=f"starting vLLM ({python}): about a minute per engine on a CPU")
    st.session_state[FRAME] = run_vllm_benchmark(pairs, vllm_settings, python, progress=_progress_reporter(bar))


def run_server_comparison(run: ServerRun) -> None:
    """The suite against a running vLLM server (and its baseline) at each concurrency level."""
    st.session_state[NOTE] = None
    bar = st.progress(0.0, text=f"asking {run.url}")
    st.session_state[FRAME] = with_vllm_speedups(pd.DataFrame(server_benchmark(run, progress=_progress_reporter(bar))))


def _overlay() -> pd.DataFrame | None:
    """An earlier CSV to draw next to this run, its pairs renamed 'pair [file]', or None (a bad file is reported)."""
    uploaded = st.file_uploader("Overlay an earlier benchmark CSV", type="csv", key="compare_upload")
    if uploaded is None:
        return None
    with shows_errors():
        earlier = tables.load_csv(uploaded)
        return earlier.assign(pair=earlier["pair"] + f" [{uploaded.name}]")
    return None


def show_charts(frame: pd.DataFrame) -> None:
    """The four charts of `specdec.bench.charts`, one colour per pair, two by two."""
    figures = list(benchmark_figures(frame).items())
    for row in range(0, len(figures), 2):
        for column, (name, figure) in zip(st.columns(2), figures[row:row + 2]):
            figure.update_layout(height=420, legend=dict(orientation="h", yanchor="top", y=-0.25))
            column.plotly_chart(figure, width="stretch", key=f"chart_{name}")


def show_families(frame: pd.DataFrame) -> None:
    """Every family side by side, per category, with Spec-Bench's published numbers beside ours (when several ran)."""
    table = families_table(frame)
    if len(table) < 2:
        return
    st.subheader("Every family, Spec-Bench style")
    st.caption(f"Median speedup over generate per prompt category, tokens per target pass and c (a draft step over a target "
               f"step, measured) per drafting family; spec_bench_*: [{SETTING}]({LEADERBOARD}), the leaderboard row beside "
               "each family (suffix decoding has none and sits beside REST, the retrieval method; layer skipping has none).")
    st.dataframe(table.round(2), hide_index=True, width="stretch")
    figures = list(families_figures(frame).items())
    for name, figure in figures:
        figure.update_layout(height=420, legend=dict(orientation="h", yanchor="top", y=-0.25))
        st.plotly_chart(figure, width="stretch", key=f"chart_{name}")


def show_results(frame: pd.DataFrame | None, overlay: pd.DataFrame | None) -> None:
    """Charts and the table for this run and the overlay; the CSV of this run."""
    frames = [part for part in (frame, overlay) if part is not None and not part.empty]
    if not frames:
        st.info("Choose pairs in the sidebar and press Run benchmark, or upload an earlier CSV.")
        return
    combined = pd.concat(frames, ignore_index=True)
    if has_batches(combined):
        show_batches(combined)
        if frame is not None and not frame.empty:
            st.download_button("Download CSV", frame.to_csv(index=False), file_name="specdec-batches.csv", mime="text/csv",
                               type="primary", help="one row per batch size and method: throughput, passes, times, exactness")
        return
    show_families(combined)
    show_charts(combined)
    st.subheader("Results")
    st.caption("Medians over prompts and repeats. acceptance_rate is accepted / drafted; alpha_estimate is accepted / "
               "tested, the per-token alpha of the formulas; efficiency is measured / predicted speedup.")
    st.dataframe(tables.overview(combined).round(3), hide_index=True, width="stretch")
    st.caption("Precision: " + "; ".join(f"{pair}: {how}" for pair, how in tables.precisions(combined).items()))
    if frame is None or frame.empty:
        return
    for _, row in tables.best_gammas(frame).iterrows():
        st.markdown(f"Best fixed gamma for **{row['pair']}**: {int(row['gamma'])} (median speedup {row['median_speedup']:.2f}×)")
    st.download_button("Download CSV", frame.to_csv(index=False), file_name="specdec-benchmark.csv", mime="text/csv",
                       type="primary", help="one row per run: settings, device, dtype, library versions, seed, timestamp")
    with st.expander(f"All {len(frame)} runs of this benchmark"):
        st.dataframe(frame, hide_index=True, width="stretch")


st.title("Compare pairs")
st.caption("Every pair runs every gamma on every chosen prompt, next to the target alone with transformers' `generate` "
           "(the baseline of every speedup). Device, dtype, temperature, top-k, top-p, max new tokens and seed come from "
           "the sidebar; its single gamma is replaced here by a range. Each run generates max-new-tokens tokens (10–20 s "
           "apiece for the default pair on a laptop CPU in float32, with a warm-up run of each variant first): start small.")
chosen = _choose_pairs()
ENGINES = {"specdec": "specdec, here", "batches": "specdec, batches", "vllm": "vLLM, offline", "server": "vLLM server"}
engine = st.radio("Engine", list(ENGINES), format_func=ENGINES.get, horizontal=True, **remember("compare_engine", "specdec"),
                  help="vLLM runs in its own environment (requirements-vllm.txt, see the README) as a separate process: the "
                       "pairs' targets with vLLM's draft model (or n-gram lookup for prompt-lookup pairs) at each gamma of the "
                       "range, compared with vLLM's own plain decoding. A vLLM server is any running `vllm serve` with a "
                       "--speculative-config, compared with the same model served without one, at several requests at once.")
if engine == "server":
    columns = st.columns([3, 3, 2, 2])
    server_url = columns[0].text_input("Server with speculation", **remember("compare_server", "http://127.0.0.1:8000"))
    baseline_url = columns[1].text_input("Baseline server (same model, no speculation; optional)", **remember("compare_baseline", ""))
    server_model = columns[2].text_input("Model name (optional)", **remember("compare_server_model", ""),
                                         help="empty: the server's only model")
    levels = columns[3].multiselect("Requests at once", [1, 2, 4, 8, 16, 32], **remember("compare_concurrency", list(CONCURRENCY)))
if engine == "batches":
    sizes = st.multiselect("Batch sizes", [1, 2, 4, 8, 16], **remember("compare_batch_sizes", [1, 2, 4]),
                           help="every size runs the same prompts (as many as the largest size), plain and speculative "
                                "(the pair's draft model, chains with the stop rule)")
columns = st.columns([2, 3, 1, 1])
if engine not in ("server", "batches"):     # a server drafts what its --speculative-config says
    gamma_range = columns[0].slider("gamma range", 1, 12, **remember("compare_gammas", (1, 4)))
categories = ["batch"] if engine == "batches" else columns[1].multiselect("Prompt categories", CATEGORIES, **remember("compare_categories", ["code", "summarization"]))
per_category = 1 if engine == "batches" else columns[2].number_input("prompts per category", 1, 4, **remember("compare_per_category", 1))
if engine == "specdec":    # the schedules, trees and transformers' baselines are ours to run
    repeats = columns[3].number_input("repeats", 1, 5, **remember("compare_repeats", 1))
    columns = st.columns(4)
    stop = columns[2].checkbox("Also the stop rule (the default)", **remember("compare_stop", True),
                               help="drafts token by token while another one is worth its cost")
    tree = columns[3].checkbox("Also a token tree", **remember("compare_tree", False),
                               help=f"a TreeDrafter of at most {settings.tree_budget} nodes (the sidebar's tree budget); "
                                    "pairs whose draft is prompt lookup skip it")
    adaptive = columns[0].checkbox("Also an adaptive gamma", **remember("compare_adaptive", False),
                                   help="gamma chosen round by round from the running α and the measured costs")
    assisted = columns[1].checkbox("Also transformers' assisted generation", **remember("compare_assisted", False),
                                   help="transformers' own speculative decoding with the same draft, at each gamma")
    families = st.checkbox("Every family, Spec-Bench style: the pair's draft model with its default, prompt lookup, Token "
                           "Recycling, lookahead, suffix decoding and layer skipping, each on the pair's target",
                           **remember("compare_families", False),
                           help="the methods that need no draft model run on the pair's target alone; a table and charts per "
                                "category show them next to Spec-Bench's published numbers")

missing = [] if engine == "server" else sorted({entry.name for name in chosen for entry in missing_models(_pair_settings(name))})
if missing:
    st.info(f"Some models are not downloaded yet: {', '.join(missing)}.")
    if st.button("Download them", key="compare_download"):
        with shows_errors():
            fetch_models(missing)
            st.rerun()
run_column, stop_column, _ = st.columns([1, 1, 4])
ready = bool(categories) and not missing and (bool(levels) if engine == "server" else bool(chosen)) and \
    (engine != "batches" or bool(sizes))
run = run_column.button("Run benchmark", type="primary", disabled=not ready, width="stretch")
stop_column.button("Stop", width="stretch", help="Stops after the run in progress; the finished runs stay on the page.")

# Fixed containers keep every later element in the same place whether or not a run happens in this
# rerun, so the browser never shows a stale copy of an element next to its replacement.
progress_area, note_area = st.container(), st.container()
if run:
    waiting = progress_area.empty()
    with progress_area, shows_errors(), shared_turns().turn(waiting_note(waiting, "benchmark"), label="a benchmark in another tab"):
        waiting.empty()
        if engine == "vllm":
            decoding = settings.decoding
            run_vllm_comparison(chosen, VllmSettings(
                gammas=tuple(range(gamma_range[0], gamma_range[1] + 1)), categories=tuple(categories),
                prompts_per_category=int(per_category), max_new_tokens=decoding.max_new_tokens, temperature=decoding.temperature,
                seed=decoding.seed or 0))
        elif engine == "batches":
            run_batch_comparison(chosen, sizes)
        elif engine == "server":
            run_server_comparison(ServerRun(url=server_url.strip(), baseline_url=baseline_url.strip() or None,
                                            model=server_model.strip() or None, concurrency=tuple(sorted(levels)),
                                            categories=tuple(categories), prompts_per_category=int(per_category),
                                            max_new_tokens=settings.decoding.max_new_tokens, temperature=settings.decoding.temperature,
                                            seed=settings.decoding.seed or 0))
        else:
            run_comparison(chosen, _bench_settings(tuple(gamma_range), stop, adaptive, assisted, tree, categories, int(per_category),
                                                   int(repeats), families))
if st.session_state.get(NOTE):
    note_area.warning(st.session_state[NOTE])
show_results(st.session_state.get(FRAME), _overlay())
