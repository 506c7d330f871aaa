"""The engine: the pieces of speculative decoding, one concept per module, and the one loop that uses them.

Notation: p is the target, q the draft, gamma the drafted tokens per round, alpha the chance a tested draft is kept.

    loop.py                the one loop for a text and a batch (`speculate`), one round's steps in rounds.py
    contract.py            the drafter contract: begin, draft, observe, declared `Capabilities`
    model.py               the model contract: what a runtime gives (rows, feed, keep, rollback, compact)
    trees.py               proposals and token trees (a chain is a tree of width one)
    verification.py        the accept/reject rule in torch; tree_verification.py the walk down a tree
    sampling.py            temperature, top-k, top-p
    schedule.py            gamma schedules; stop_rule.py the stop rule; costs.py a cost profile
    drafting_plan.py       what a generation drafts with, decided before its first pass
    inputs.py, results.py  arguments and results; timing.py timing from outside

What a run drafts is decided above, once, by the planner (`specdec.planner`); the loop asks no drafter its type.
"""
