"""specdec: lossless speculative decoding you can read, run and measure.

Notation everywhere: p = target model, q = draft model, gamma = drafted tokens per round,
alpha = acceptance rate, c = draft cost / target cost.

    import specdec
    target = specdec.load_model("gpt2")
    draft = specdec.load_model("distilgpt2")
    result = specdec.speculative_generate(target, draft, input_ids, gamma=4, temperature=0)
    result.tokens, result.stats.acceptance_rate, result.stats.tokens_per_target_pass
    results = specdec.speculative_generate(target, draft, [ids_a, ids_b], temperature=0)   # a batch: one result per row

The folders are the layers; each imports only from the layers listed before it:

    specdec/reference/   the rule, its formulas, its classic bugs and statistics, in NumPy
    specdec/             the engine: the loop (speculative.py), the rule in torch (verification.py),
                         token trees (trees.py, tree_verification.py), KV caches, sampling, gamma
                         schedules and the stop rule, costs, plain decoding, batches of texts
                         (batched.py, batch_cache.py)
    specdec/drafting/    the drafting methods, one per module, the contract the loop speaks to them,
                         and the default policy (which drafter, which schedule, the costs)
    specdec/zoo/         models: the catalogue, fetching, converted copies, loading, pairs
    specdec/bench/       measurement: prompts, the harness, transformers' baselines, tables, charts
    specdec/cli/         the `specdec` command

One exception, on purpose: `reference.bugs.warp` borrows the engine's warping, so the lessons
warp exactly as a run does. A new drafter belongs in `drafting/` (one module), a new model in
`zoo/catalog.py`, a new benchmark method in `bench/harness.py`. The dashboard (`app.py`,
`pages/`) sits on top, and `specdec` never imports streamlit.

The public API is what this module exports; everything else may change.
"""

import os

# On Apple Silicon, let operators MPS lacks fall back to the CPU. It must be set before torch is
# imported anywhere, so it is the first thing the package does.
os.environ.setdefault("PYTORCH_ENABLE_MPS_FALLBACK", "1")

# OpenMP threads that wait by sleeping, not spinning: a spinning wait fights whoever holds the other cores
# (2 cores, one `yes > /dev/null` beside: 6.0 -> 1.5 tokens/s spinning, 3.5 passive). libgomp reads this once, when
# torch loads it, and llama.cpp's library shares torch's libgomp, so it too must be set before torch is imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# Public names and the module each lives in. They are imported on first use, so that
# `import specdec.reference.rule` (the NumPy reference) and `specdec toy` do not load torch.
_EXPORTS = {
    "autoregressive_generate": "specdec.generation.autoregressive",
    "speculative_generate": "specdec.generation.speculative",
    "batch_throughput": "specdec.generation.run",
    "run_plan": "specdec.generation.run",
    "DraftingPlan": "specdec.generation.policy",
    "plan_drafting": "specdec.generation.policy",
    "default_drafter": "specdec.generation.policy",
    "METHODS": "specdec.generation.methods",
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
    "EagleDrafter": "specdec.drafting.eagle",
    "EagleHead": "specdec.drafting.eagle_head",
    "train_head": "specdec.heads.training",
    "TrainingSettings": "specdec.heads.training",
    "load_head": "specdec.heads.files",
    "save_head": "specdec.heads.files",
    "SpecdecError": "specdec.errors",
    "check_same_tokenizer": "specdec.zoo.loading",
    "load_model": "specdec.zoo.loading",
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
