"""The reference layer: the accept/reject rule in plain NumPy, its formulas, its classic bugs, and the statistics that check it.

Nothing here runs a model, and nothing here imports torch or the rest of `specdec` (except
`bugs.warp`, which borrows the engine's own warping so that the lessons warp exactly as the
engine does). The engine builds on this layer: `specdec.engine.schedule` uses the formulas of `theory`. The engine's torch
code (`specdec.engine.verification`, `specdec.engine.sampling`) is held against these modules by the tests.

- `rule`: the rule at one position and over blocks of a toy Markov language (trusted reference)
- `theory`: alpha, the residual, expected tokens per pass, the wall-clock speedup, the best gamma
- `stats`: binomial standard errors and Pearson's chi-square test
- `bugs`: the exact output distribution of each classic mistake, and the broken rules themselves
- `toy`: the losslessness demo behind `specdec toy`
- `explainer`: one position's accept/reject picture and the speedup calculator, for the Explainer page

Not handled here: temperature and top-k/top-p on logits (`specdec.engine.sampling`), caches, models.
"""
