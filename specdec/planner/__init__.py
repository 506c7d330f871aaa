"""The planner: one plan behind every door, decided once from a run spec, the loaded resources and this machine's
measurements.

Notation: p is the target, q the draft, gamma the drafted tokens per round, c a draft step's cost over a
target step, v(k) a verification pass over k drafted tokens in target steps.

    models.py     before loading: which runtime runs each model, at which precision, and why (`choose_models`)
    drafting.py   the default drafting policy: which drafter, which gamma schedule, priced with which costs
    pricing.py    a round's price: the costs it is priced with, the best chain, where trees pay
    plan.py       the one plan (`plan`, `Plan`): each model's plan, the drafting plan, and the header every door prints

The command line, the dashboard's pages, the benchmark and `speculative_generate` build a run spec
(`specdec.run_spec.RunSpec`) or hold models, ask here, and print `Plan.header()`; nothing else resolves "auto"
or picks a drafter. The methods themselves are the registry's (`specdec.registry`): the planner names none.
"""

from specdec.planner.models import ModelPlan, choose_models
from specdec.planner.plan import Plan, plan

__all__ = ["ModelPlan", "Plan", "choose_models", "plan"]
