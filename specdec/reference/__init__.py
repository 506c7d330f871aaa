"""The reference layer: the accept/reject rule in plain NumPy, its formulas, its classic bugs, and the statistics that check it.

Two layers in one folder, and the import contract in `pyproject.toml` keeps them apart:

- below the engine, NumPy only (the engine builds on them: `specdec.engine.schedule` uses `theory`):
  - `rule`: the rule at one position and over blocks of a toy Markov language (trusted reference)
  - `theory`: alpha, the residual, expected tokens per pass, the wall-clock speedup, the best gamma
  - `stats`: binomial standard errors and Pearson's chi-square test
  - `toy`: the losslessness demo behind `specdec toy`
  - `explainer`: one position's accept/reject picture and the speedup calculator, for the Explainer page
  - `chain_round`: one chain round step by step and the alpha^k terms of E[tokens], for the Explainer's stepper
- above the engine, the classic bugs, which break the engine's own pieces on purpose so the lessons and
  the tests' negative controls show exactly what each mistake does:
  - `bugs`: the exact output distribution of each classic mistake, and the broken rules themselves
    (`bugs.warp` borrows the engine's warping, so the lessons warp exactly as a run does)
  - `tree_bugs`, `candidate_bugs`: the same for token trees and fixed candidates
  - `batch_bugs`: one count for a whole batch's cache, run through the engine's own loop

The engine's torch code (`specdec.engine.verification`, `specdec.engine.sampling`) is held against
these modules by the tests. Not handled here: temperature and top-k/top-p on logits
(`specdec.engine.sampling`), caches, models.
"""
