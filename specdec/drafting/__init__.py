"""Drafting methods, one per module, each written against the contract (`specdec.engine.contract`).

Notation: p is the target, q the draft, gamma the drafted tokens per round, c a draft step's cost over a
target step.

- `draft_model`: a small causal LM as the draft (`ModelDrafter`), every text in one draft pass per step
- `tree_drafter`: a draft model growing a token tree (`TreeDrafter`, its limits in `TreeSettings`)
- `cross_tokenizer`: a draft with another tokenizer (`CrossTokenizerDrafter`)
- `prompt_lookup`: n-gram lookup in the prompt and the output (`PromptLookupDrafter`)
- `token_recycling`: the target's runner-up tokens, recycled (`TokenRecyclingDrafter`)
- `lookahead`: Jacobi iterations riding along in the verification pass (`LookaheadDrafter`)
- `suffix`, `suffix_tree`: what followed the text's end before, counted in a suffix tree (`SuffixDrafter`)
- `layer_skip`: the target skipping some of its own layers (`LayerSkipDrafter`)
- `no_draft`: drafting nothing, plain decoding as the same loop (`NoDraft`, `PLAIN`)

A new method is a new module here: a class with `name`, `capabilities`, `draft_model`, `begin`, `draft` and
`observe` (and its options dataclass beside it), plus one `register(Method(...))` in `specdec.registry`; the loop
needs no change (tests/test_drafter_contract.py plugs one in, in a test file). The list of methods by name
(`specdec.registry`) and the default choice of drafter (`specdec.planner.drafting`) live above this layer.
"""
