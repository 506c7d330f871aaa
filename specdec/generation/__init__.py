"""Generation: running a plan (the loop with its timing, streaming and results), and plain decoding.

Notation: p is the target, q the draft, gamma the drafted tokens per round.

    run.py             `run_plan`: a `specdec.engine.drafting_plan.DraftingPlan` run on a target, one result per prompt
    autoregressive.py  `autoregressive_generate`: plain decoding, the same loop with a drafter that drafts nothing

What a run drafts is decided above this layer, once, by the planner (`specdec.planner`).
"""
