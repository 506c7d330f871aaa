"""The reference layer: the accept/reject rule in plain NumPy, its formulas, and the statistics that check it.

One layer, below the engine, NumPy only (the engine builds on it: `specdec.engine.schedule` uses `theory`):

- `rule`: the rule at one position and over blocks of a toy Markov language (trusted reference)
- `theory`: alpha, the residual, expected tokens per pass, the wall-clock speedup, the best gamma
- `stats`: binomial standard errors and Pearson's chi-square test
- `toy`: the losslessness demo behind `specdec toy`
- `explainer`: one position's accept/reject picture and the speedup calculator, for the Explainer page
- `chain_round`: one chain round step by step and the alpha^k terms of E[tokens], for the Explainer's stepper

The classic bugs, which break the engine's own pieces on purpose, live above the engine (`specdec.bugs`).
The engine's torch code (`specdec.engine.verification`, `specdec.engine.sampling`) is held against
these modules by the tests. Not handled here: temperature and top-k/top-p on logits
(`specdec.engine.sampling`), caches, models.
"""
