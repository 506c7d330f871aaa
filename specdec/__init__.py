"""specdec: lossless speculative decoding you can read, run and measure.

Notation everywhere: p = target model, q = draft model, gamma = drafted tokens per round,
alpha = the chance a drafted token is accepted when tested (measured: accepted/tested, `alpha_estimate`; the
acceptance rate, accepted/drafted, is another number), c = draft cost / target cost.

    import specdec
    target = specdec.load_model("gpt2")
    draft = specdec.load_model("distilgpt2")
    result = specdec.speculative_generate(target, draft, input_ids, gamma=4, temperature=0)
    result.tokens, result.stats.acceptance_rate, result.stats.tokens_per_target_pass
    results = specdec.speculative_generate(target, draft, [ids_a, ids_b], temperature=0)   # a batch: one result per row

The folders are the layers, each importing only from those listed below it (`pyproject.toml` holds the
contract, `tests/test_layers.py` proves it can fail):

    specdec/cli/           the `specdec` command: its grammar and what each command does
    specdec/bench/         measurement: prompts, the harness and its methods, tables, charts, Spec-Bench, vLLM
    specdec/head_training.py   training a head for a loaded pair on ShareGPT
    specdec/pair/          a pair from a run spec to tokens: its resources, loading as planned, measuring, running
    specdec/planner/       the one plan: each model's runtime and precision, the drafting and why, the header every
                           door prints
    specdec/run_spec.py    one run described once: pair, precision, drafting, decoding
    specdec/registry/      the one list of drafting methods: what each needs, its options, how it drafts
    specdec/runtimes/      the runtimes as entries: what each runs here, how it loads, how a plan names it
    specdec/heads/         trained EAGLE-3 heads: the network, its tree reader, training, files
    specdec/generation/    running a drafting plan with its timing, and plain decoding (autoregressive_generate)
    specdec/zoo/           models: the catalogue, fetching, converted copies, loading
    specdec/drafting/      the drafting methods, one per module, each written against the contract;
                           the tree policy and the reader it grows trees with
    specdec/kernels/       int8 / int4 / W8A8 / packed bfloat16 layers, invariant attention, precision
    specdec/bugs/          the lessons' classic bugs, which break the engine's pieces on purpose
    specdec/runtime/       what runs a model behind the model contract: transformers on torch (its KV
                           caches), llama.cpp for GGUF files; measured costs
    specdec/engine/        the pieces: the one loop (loop.py) and a round's steps (rounds.py), the drafter
                           contract (contract.py) and the model contract (model.py), token trees, the rule
                           in torch, sampling, schedules and the stop rule, inputs and results, timing
    specdec/reference/     the rule, its formulas and statistics in NumPy: the trusted reference
    specdec/store/         files kept on disk: atomic folders, manifests, wheels, progress with time left
    specdec/errors.py      `SpecdecError`: one line a person can act on

A new drafting method is a module in `drafting/` and one `register(Method(...))` in `registry/methods.py`; a
new runtime implements `engine/model.py` and is one `register(Runtime(...))` (`runtimes/`); a new model is an entry in
`zoo/catalog.py`. The dashboard (`app.py`, `pages/`) sits on top, and `specdec` never imports streamlit.

The public API is what this module exports; everything else may change.
"""

import os

# On Apple Silicon, let operators MPS lacks fall back to the CPU. It must be set before torch is
# imported anywhere, so it is the first thing the package does.
os.environ.setdefault("PYTORCH_ENABLE_MPS_FALLBACK", "1")

# How OpenMP threads wait between operations, chosen by how busy the machine is now (`specdec.store.machine.
# wait_policy_here`): spinning a while where it is quiet (a sleeping thread wakes late at every operation: 16.5 against
# 10 tokens/s on 2 AVX2 cores), sleeping beside other work, which spinning threads fight (9.1 against 6.4). libgomp
# reads it once, when torch loads it, and llama.cpp's library shares torch's libgomp: so it is decided here, before
# torch is imported. A policy set by the user (OMP_WAIT_POLICY or GOMP_SPINCOUNT) is kept.
if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
    from specdec.store.machine import busy_now, wait_policy_here

    os.environ.update(wait_policy_here(busy_now()))

# Public names and the module each lives in. They are imported on first use, so that
# `import specdec.reference.rule` (the NumPy reference) and `specdec toy` do not load torch.
_EXPORTS = {
    "autoregressive_generate": "specdec.generation.autoregressive",
    "speculative_generate": "specdec.pair.running",
    "batch_throughput": "specdec.generation.run",
    "run_plan": "specdec.generation.run",
    "DraftingPlan": "specdec.engine.drafting_plan",
    "plan_drafting": "specdec.planner.drafting",
    "default_drafter": "specdec.planner.drafting",
    "Plan": "specdec.planner",
    "plan": "specdec.planner",
    "choose_models": "specdec.planner",
    "load_spec": "specdec.pair.loading",
    "load_pair": "specdec.pair.loading",
    "generate": "specdec.pair.running",
    "METHODS": "specdec.registry",
    "Method": "specdec.registry",
    "register": "specdec.registry",
    "RunSpec": "specdec.run_spec",
    "Drafting": "specdec.run_spec",
    "ModelChoices": "specdec.run_spec",
    "TorchModel": "specdec.runtime.pytorch.torch_model",
    "Decoding": "specdec.engine.inputs",
    "Capabilities": "specdec.engine.contract",
    "Drafter": "specdec.engine.contract",
    "DraftRequest": "specdec.engine.contract",
    "Generation": "specdec.engine.contract",
    "Verified": "specdec.engine.contract",
    "DraftTree": "specdec.engine.trees",
    "ExtraRows": "specdec.engine.trees",
    "DraftedToken": "specdec.engine.results",
    "GenerationResult": "specdec.engine.results",
    "GenerationStats": "specdec.engine.results",
    "Round": "specdec.engine.results",
    "TokenOrigin": "specdec.engine.results",
    "SamplingConfig": "specdec.engine.sampling",
    "ModelDrafter": "specdec.drafting.draft_model",
    "TreeDrafter": "specdec.drafting.tree_drafter",
    "TreeSettings": "specdec.drafting.tree_drafter",
    "CrossTokenizerDrafter": "specdec.drafting.cross_tokenizer",
    "PromptLookupDrafter": "specdec.drafting.prompt_lookup",
    "TokenRecyclingDrafter": "specdec.drafting.token_recycling",
    "LookaheadDrafter": "specdec.drafting.lookahead",
    "SuffixDrafter": "specdec.drafting.suffix",
    "LayerSkipDrafter": "specdec.drafting.layer_skip",
    "EagleDrafter": "specdec.heads.reader",
    "EagleHead": "specdec.heads.head",
    "TreeReader": "specdec.drafting.tree_reader",
    "ModelReader": "specdec.drafting.tree_reader",
    "train_head": "specdec.heads.training",
    "TrainingSettings": "specdec.heads.training",
    "load_head": "specdec.heads.files",
    "save_head": "specdec.heads.files",
    "SpecdecError": "specdec.errors",
    "check_same_tokenizer": "specdec.zoo.loading",
    "load_model": "specdec.pair.loading",
    "load_tokenizer": "specdec.zoo.loading",
    "resolve_device": "specdec.kernels.devices",
    "resolve_dtype": "specdec.kernels.devices",
}


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'specdec' has no attribute '{name}'")


__version__ = "0.1.0"

__all__ = sorted(_EXPORTS)
