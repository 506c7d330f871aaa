"""Compare: benchmark several pairs across a range of gamma and prompt categories; charts, table and CSV."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import streamlit as st

from pages.common import fetch_models, jobs, pair_loader, shows_errors
from pages.common.figures import verification_cost_figure, verification_speedup_figure
from pages.common.models import draw_loading, missing_models
from pages.common.settings import AUTO, CUSTOM, Settings
from pages.common.sidebar import current_settings, pair_label
from pages.common.state import is_kept, keep, kept, remember
from pages.common.turns import Turns, shared_turns
from specdec.bench import harness, tables
from specdec.bench.batches import batch_benchmark, batch_table
from specdec.bench.charts import benchmark_figures
from specdec.bench.gammas import gamma_labels
from specdec.bench.load_charts import batch_figure, has_batches
from specdec.bench.methods import families as bench_families
from specdec.bench.prompts import CATEGORIES
from specdec.bench.settings import ALL, BenchSettings
from specdec.bench.spec_bench import LEADERBOARD, SETTING, families_figures, families_table
from specdec.bench.vllm.offline import VllmSettings, run_vllm_benchmark
from specdec.bench.vllm.rows import with_vllm_speedups
from specdec.bench.vllm.server import CONCURRENCY, ServerRun, server_benchmark
from specdec.bench.vllm.worker_process import find_vllm_python
from specdec.reference.explainer import VerificationCurve
from specdec.pair.measuring import costs_curve
from specdec.registry import METHODS, TREE, pairs
from specdec.store.machine import cpu_facts
from specdec.zoo.catalog import split_pair_name

settings = current_settings()
FRAME, NOTE = "compare_frame", "compare_note"
BENCHMARK = "job:compare"
COSTS, COSTS_CURVE = "job:compare_costs", "compare_costs_curve"


def _pair_settings(name: str) -> Settings:
    """The sidebar's settings with the pair `name` ('draft->target', of the catalogue or custom), to load it: how it
    drafts is the benchmark's (its methods and gamma labels), so the sidebar's method and options stay out."""
    drafting = dict(method=AUTO, options=())
    if name in pairs():
        return replace(settings, pair=name, **drafting)
    draft, target = split_pair_name(name)
    return replace(settings, pair=CUSTOM, custom_draft=draft, custom_target=target, **drafting)


def _choose_pairs() -> list[str]:
    """The pairs to compare, picked in the sidebar (the current custom pair can join the catalogue's)."""
    options = list(pairs()) + (
        [settings.pair_name] if settings.pair == CUSTOM and settings.draft and settings.target else []
    )
    if is_kept("compare_pairs"):  # drop pairs that are gone (a custom pair that was changed)
        keep("compare_pairs", [name for name in kept("compare_pairs") if name in options])
    default = [settings.pair_name] if settings.pair_name in options else []
    with st.sidebar:
        st.subheader("Pairs to compare")
        return st.multiselect(
            "Pairs",
            options,
            format_func=lambda name: pair_label(name) if name in pairs() else f"custom: {name}",
            label_visibility="collapsed",
            **remember("compare_pairs", default or [options[0]]),
        )


def _tree_budget() -> int:
    """The budget of "Also a token tree": the sidebar's, when it
    drafts with the tree method, else the tree method's default."""
    chosen = dict(settings.options) if settings.method == TREE else {}
    return METHODS[TREE].parse_options(chosen).budget


def _bench_settings(
    gammas: tuple[int, int],
    stop: bool,
    adaptive: bool,
    assisted: bool,
    tree: bool,
    categories: list[str],
    per_category: int,
    repeats: int,
    families: bool = False,
    default: bool = True,
) -> BenchSettings:
    """The boxes ticked, as `specdec bench` would read them
    (`BenchSettings.chosen`): every family is ALL, with its defaults."""
    methods = ("speculative",) + (("assisted",) if assisted else ()) + ((ALL,) if families else ())
    labels = gamma_labels(
        range(gammas[0], gammas[1] + 1),
        stop=stop,
        adaptive=adaptive,
        tree_budget=_tree_budget() if tree else None,
        default=default or families,
    )
    return BenchSettings.chosen(
        methods,
        labels,
        categories=tuple(categories),
        prompts_per_category=per_category,
        decoding=settings.decoding,
        repeats=repeats,
    )


def _taking_turns(job: jobs.Job, turns: Turns):
    """This job's place in the line of heavy work across tabs, reported while it waits."""
    return turns.turn(
        on_wait=lambda ahead, running: job.report(waiting=(ahead, running)), label="a benchmark in another tab"
    )


def _report_runs(job: jobs.Job, part: int, parts: int, prefix: str = ""):
    """A progress callback (done, total, message) for part `part` of `parts` (a pair), reported as the job's bar."""

    def report(done: int, total: int, message: str) -> None:
        job.report(bar=(min((part + done / max(total, 1)) / parts, 1.0), f"{prefix}{message} ({done}/{total})"))

    return report


def comparison_work(pairs: list[str], bench_settings: BenchSettings, turns: Turns):
    """The job of a benchmark of our engine: each pair in turn, every finished run reported (and kept after a Stop)."""
    loaders = [pair_loader(_pair_settings(name)) for name in pairs]

    def work(job: jobs.Job) -> pd.DataFrame:
        rows: list[dict] = []
        with _taking_turns(job, turns):
            for index, load in enumerate(loaders):
                pair = load(job)
                job.report(phase="running")
                harness.run_benchmark(
                    [pair],
                    bench_settings,
                    progress=_report_runs(job, index, len(loaders)),
                    on_row=lambda row: (rows.append(row), job.report(rows=tuple(rows))),
                )
        return harness.rows_to_frame(rows)

    return work


def batch_comparison_work(pairs: list[str], sizes: list[int], turns: Turns):
    """The job of plain and speculative throughput at each batch size, on the same prompts (`specdec.bench.batches`)."""
    loaders = [(name, pair_loader(_pair_settings(name))) for name in pairs]

    def work(job: jobs.Job) -> pd.DataFrame:
        frames: list[pd.DataFrame] = []
        with _taking_turns(job, turns):
            for index, (name, load) in enumerate(loaders):
                pair = load(job)
                job.report(phase="running")
                frames.append(
                    batch_benchmark(
                        pair,
                        sorted(sizes),
                        settings.decoding,
                        progress=_report_runs(job, index, len(loaders), prefix=f"{name}: "),
                    )
                )
        return pd.concat(frames, ignore_index=True)

    return work


def vllm_work(pairs: list[str], vllm_settings: VllmSettings, turns: Turns):
    """The job of the pairs through vLLM's offline engine, in its own environment (one line when it is missing)."""
    python = find_vllm_python()

    def work(job: jobs.Job) -> pd.DataFrame:
        with _taking_turns(job, turns):
            job.report(phase="running", bar=(0.0, f"starting vLLM ({python}): about a minute per engine on a CPU"))
            return run_vllm_benchmark(pairs, vllm_settings, python, progress=_report_runs(job, 0, 1))

    return work


def server_work(run: ServerRun, turns: Turns):
    """The job of the suite against a running vLLM server (and its baseline) at each concurrency level."""

    def work(job: jobs.Job) -> pd.DataFrame:
        with _taking_turns(job, turns):
            job.report(phase="running", bar=(0.0, f"asking {run.url}"))
            return with_vllm_speedups(pd.DataFrame(server_benchmark(run, progress=_report_runs(job, 0, 1))))

    return work


def draw_benchmark(job: jobs.Job) -> None:
    """A running benchmark: its place in line, a load, the bar of runs done."""
    if job.progress.get("waiting"):
        ahead, running = job.progress["waiting"]
        st.info(
            f"Waiting for {running}: {'1 job' if ahead == 1 else f'{ahead} jobs'} ahead of your benchmark. It starts "
            "as soon "
            "as they finish; Stop leaves the line.",
            icon=":material/hourglass_top:",
        )
        return
    draw_loading(job)
    bar = job.progress.get("bar")
    if job.progress.get("phase") == "running":
        st.progress(bar[0] if bar else 0.0, text=bar[1] if bar else "starting")


def keep_benchmark(job: jobs.Job) -> None:
    """The benchmark that ended: its frame, or after a Stop the runs finished so far."""
    if not job.stopped:
        st.session_state[FRAME] = job.result
        return
    rows = job.progress.get("rows", ())
    if rows:
        st.session_state[FRAME] = harness.rows_to_frame(list(rows))
    st.session_state[NOTE] = f"Stopped early: the {len(rows)} runs finished so far are kept."


def costs_work(load, turns: Turns):
    """The job of timing the sidebar's pair here: c and v(gamma) (kept in the store for next time), as curves."""

    def work(job: jobs.Job) -> tuple[VerificationCurve, str]:
        with _taking_turns(job, turns):
            pair = load(job)
            job.report(
                phase="running",
                bar=(0.0, "timing a draft step and verification passes of 2 to 17 tokens (a few seconds)"),
            )
            return costs_curve(pair), f"{pair.draft_name} → {pair.target_name}"

    return work


def keep_costs(job: jobs.Job) -> None:
    if not job.stopped:
        st.session_state[COSTS_CURVE] = job.result


def show_costs() -> None:
    """What verifying costs on this machine for the sidebar's pair, and the speedup it allows (chapter 8, 'Why
    verification is not free on a CPU with few cores')."""
    st.subheader("What verifying costs here")
    st.caption(
        "Chapter 1's speedup assumes a pass over gamma + 1 tokens costs one step, v(gamma) = 1: true where a step is "
        "bound "
        "by reading the weights (a GPU). On a CPU with few cores the arithmetic is the bound and v(gamma) climbs "
        "towards "
        "gamma + 1. This times the sidebar's pair on this machine (once; kept for the next run) and draws what any "
        "drafting "
        "could gain with it."
    )
    if st.button(
        f"Time {settings.draft} → {settings.target} here",
        key="compare_costs",
        disabled=bool(missing_models(settings)) or jobs.running(COSTS),
    ):
        with shows_errors():
            jobs.start(COSTS, costs_work(pair_loader(settings), shared_turns()), label="the timing")
    jobs.watch(COSTS, draw=draw_benchmark, finished=keep_costs)
    if st.session_state.get(COSTS_CURVE):
        curve, pair = st.session_state[COSTS_CURVE]
        left, right = st.columns(2)
        left.plotly_chart(verification_cost_figure(curve, cpu_facts()["cpu"]), width="stretch", key="chart_verify_cost")
        right.plotly_chart(verification_speedup_figure(curve), width="stretch", key="chart_verify_speedup")
        st.caption(
            f"{pair}: c = {curve.c:.2f} (a draft step over a target step); the default policy prices rounds with these "
            f"numbers and drafts nothing where even a free draft that is always right could not pay."
        )


def show_batches(frame: pd.DataFrame) -> None:
    """Throughput and the speculative gain against batch size (a
    vLLM server's gain against requests in flight beside it)."""
    st.subheader("Batches")
    st.caption(
        "The same prompts at every batch size. Throughput: all new tokens over wall time; gain: speculative over plain "
        "decoding of the same batch; exact: every row's greedy tokens equal the target alone's. A vLLM server's CSV "
        "uploaded below draws its gain against requests in flight on the same chart."
    )
    st.dataframe(batch_table(frame).round(2), hide_index=True, width="stretch")
    figure = batch_figure(frame).update_layout(height=460, legend=dict(orientation="h", yanchor="top", y=-0.25))
    st.plotly_chart(figure, width="stretch", key="chart_batches")


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
        for column, (name, figure) in zip(st.columns(2), figures[row : row + 2]):
            figure.update_layout(height=420, legend=dict(orientation="h", yanchor="top", y=-0.25))
            column.plotly_chart(figure, width="stretch", key=f"chart_{name}")


def show_families(frame: pd.DataFrame) -> None:
    """Every family side by side, per category, with Spec-Bench's published numbers beside ours (when several ran)."""
    table = families_table(frame)
    if len(table) < 2:
        return
    st.subheader("Every family, Spec-Bench style")
    st.caption(
        f"Median speedup over generate per prompt category, tokens per target pass and c (a draft step over a target "
        f"step, measured) per drafting family; spec_bench_*: [{SETTING}]({LEADERBOARD}), the leaderboard row beside "
        "each family (suffix decoding has none and sits beside REST, the retrieval method; layer skipping has none; "
        "the "
        "EAGLE-3 head sits beside EAGLE-3, which the leaderboard runs on Vicuna-13B only, with EAGLE-2 and EAGLE "
        "beside it)."
    )
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
            st.download_button(
                "Download CSV",
                frame.to_csv(index=False),
                file_name="specdec-batches.csv",
                mime="text/csv",
                type="primary",
                help="one row per batch size and method: throughput, passes, times, exactness",
            )
        return
    show_families(combined)
    show_charts(combined)
    st.subheader("Results")
    st.caption(
        "Medians over prompts and repeats. acceptance_rate is accepted / drafted; alpha_estimate is accepted / "
        "tested, the per-token alpha of the formulas; efficiency is measured / predicted speedup."
    )
    st.dataframe(tables.overview(combined).round(3), hide_index=True, width="stretch")
    st.caption("Precision: " + "; ".join(f"{pair}: {how}" for pair, how in tables.precisions(combined).items()))
    if frame is None or frame.empty:
        return
    for _, row in tables.best_gammas(frame).iterrows():
        st.markdown(
            f"Best fixed gamma for **{row['pair']}**: {int(row['gamma'])} (median speedup {row['median_speedup']:.2f}×)"
        )
    st.download_button(
        "Download CSV",
        frame.to_csv(index=False),
        file_name="specdec-benchmark.csv",
        mime="text/csv",
        type="primary",
        help="one row per run: settings, device, dtype, library versions, seed, timestamp",
    )
    with st.expander(f"All {len(frame)} runs of this benchmark"):
        st.dataframe(frame, hide_index=True, width="stretch")


st.title("Compare pairs")
st.caption(
    "Every pair runs every gamma on every chosen prompt, next to the target alone: plain decoding on the runtime "
    "and precision the plan gives the target (the baseline of every speedup). Device, dtype, temperature, top-k, "
    "top-p, max new tokens and seed come from the sidebar; its single gamma is replaced here by a range. Each run "
    "generates max-new-tokens tokens, with a warm-up run of each variant first; Home says how long the pair's last "
    "load took here: start small."
)
chosen = _choose_pairs()
ENGINES = {"specdec": "specdec, here", "batches": "specdec, batches", "vllm": "vLLM, offline", "server": "vLLM server"}
engine = st.radio(
    "Engine",
    list(ENGINES),
    format_func=ENGINES.get,
    horizontal=True,
    **remember("compare_engine", "specdec"),
    help="vLLM runs in its own environment (requirements-vllm.txt, see the README) as a separate process: the "
    "pairs' targets with vLLM's draft model (or n-gram lookup for prompt-lookup pairs) at each gamma of the "
    "range, compared with vLLM's own plain decoding. A vLLM server is any running `vllm serve` with a "
    "--speculative-config, compared with the same model served without one, at several requests at once.",
)
if engine == "server":
    columns = st.columns([3, 3, 2, 2])
    server_url = columns[0].text_input("Server with speculation", **remember("compare_server", "http://127.0.0.1:8000"))
    baseline_url = columns[1].text_input(
        "Baseline server (same model, no speculation; optional)", **remember("compare_baseline", "")
    )
    server_model = columns[2].text_input(
        "Model name (optional)", **remember("compare_server_model", ""), help="empty: the server's only model"
    )
    levels = columns[3].multiselect(
        "Requests at once", [1, 2, 4, 8, 16, 32], **remember("compare_concurrency", list(CONCURRENCY))
    )
if engine == "batches":
    sizes = st.multiselect(
        "Batch sizes",
        [1, 2, 4, 8, 16],
        **remember("compare_batch_sizes", [1, 2, 4]),
        help="every size runs the same prompts (as many as the largest size), plain and speculative "
        "(the pair's draft model, chains with the stop rule)",
    )
columns = st.columns([2, 3, 1, 1])
if engine not in ("server", "batches"):  # a server drafts what its --speculative-config says
    gamma_range = columns[0].slider("gamma range", 1, 12, **remember("compare_gammas", (1, 4)))
categories = (
    ["batch"]
    if engine == "batches"
    else columns[1].multiselect(
        "Prompt categories", CATEGORIES, **remember("compare_categories", ["code", "summarization"])
    )
)
per_category = (
    1
    if engine == "batches"
    else columns[2].number_input("prompts per category", 1, 4, **remember("compare_per_category", 1))
)
if engine == "specdec":  # the schedules, trees and transformers' baselines are ours to run
    repeats = columns[3].number_input("repeats", 1, 5, **remember("compare_repeats", 1))
    default = st.checkbox(
        "The planner's choice: what the Playground and `specdec run` draft with for these settings",
        **remember("compare_default", True),
        help="the one plan every door runs (its header is in the table's plan column): a tree, a chain, "
        "prompt lookup or plain steps, chosen from this machine's measured costs",
    )
    columns = st.columns(4)
    stop = columns[2].checkbox(
        "Also a chain under the stop rule",
        **remember("compare_stop", False),
        help="the pair's draft drafts token by token while another one is worth its cost",
    )
    tree = columns[3].checkbox(
        "Also a token tree",
        **remember("compare_tree", False),
        help=f"the tree method, at most {_tree_budget()} nodes (the sidebar's budget when it drafts with "
        "the tree method); pairs without a draft model skip it",
    )
    adaptive = columns[0].checkbox(
        "Also an adaptive gamma",
        **remember("compare_adaptive", False),
        help="gamma chosen round by round from the running α and the measured costs",
    )
    assisted = columns[1].checkbox(
        "Also transformers' assisted generation",
        **remember("compare_assisted", False),
        help="transformers' own speculative decoding with the same draft, at each gamma",
    )
    families = st.checkbox(
        "Every family, Spec-Bench style: the pair's draft model with its default, then "
        f"{', '.join(name for name in bench_families() if name != 'speculative')}, each on the pair's target",
        **remember("compare_families", False),
        help="the methods that need no draft model run on the pair's target alone, the EAGLE-3 head where one "
        "is trained for the target (Train an EAGLE-3 head, on the Playground); a table and charts per "
        "category show them next to Spec-Bench's published numbers",
    )

missing = (
    []
    if engine == "server"
    else sorted({entry.name for name in chosen for entry in missing_models(_pair_settings(name))})
)
if missing:
    st.info(f"Some models are not downloaded yet: {', '.join(missing)}.")
    if st.button("Download them", key="compare_download"):
        with shows_errors():
            fetch_models(missing)
            st.rerun()
ready = (
    bool(categories)
    and not missing
    and (bool(levels) if engine == "server" else bool(chosen))
    and (engine != "batches" or bool(sizes))
)
run = st.button(
    "Run benchmark",
    type="primary",
    disabled=not ready or jobs.running(BENCHMARK),
    help="Runs in the background: the page stays yours, and only the benchmark's own Stop ends it.",
)
if run and not jobs.running(BENCHMARK):
    st.session_state[NOTE] = None
    with shows_errors():
        if engine == "vllm":
            decoding = settings.decoding
            work = vllm_work(
                chosen,
                VllmSettings(
                    gammas=tuple(range(gamma_range[0], gamma_range[1] + 1)),
                    categories=tuple(categories),
                    prompts_per_category=int(per_category),
                    max_new_tokens=decoding.max_new_tokens,
                    temperature=decoding.temperature,
                    seed=decoding.seed or 0,
                ),
                shared_turns(),
            )
        elif engine == "batches":
            work = batch_comparison_work(chosen, sizes, shared_turns())
        elif engine == "server":
            work = server_work(
                ServerRun(
                    url=server_url.strip(),
                    baseline_url=baseline_url.strip() or None,
                    model=server_model.strip() or None,
                    concurrency=tuple(sorted(levels)),
                    categories=tuple(categories),
                    prompts_per_category=int(per_category),
                    max_new_tokens=settings.decoding.max_new_tokens,
                    temperature=settings.decoding.temperature,
                    seed=settings.decoding.seed or 0,
                ),
                shared_turns(),
            )
        else:
            work = comparison_work(
                chosen,
                _bench_settings(
                    tuple(gamma_range),
                    stop,
                    adaptive,
                    assisted,
                    tree,
                    categories,
                    int(per_category),
                    int(repeats),
                    families,
                    default,
                ),
                shared_turns(),
            )
        jobs.start(BENCHMARK, work, label="the benchmark")
jobs.watch(BENCHMARK, draw=draw_benchmark, finished=keep_benchmark)
if st.session_state.get(NOTE):
    st.warning(st.session_state[NOTE])
show_results(st.session_state.get(FRAME), _overlay())
show_costs()
