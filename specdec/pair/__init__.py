"""A draft/target pair, from a run spec to tokens: what the command line, the dashboard and the benchmark share.

Notation: p is the target, q the draft, gamma the drafted tokens per round.

    resources.py   `LoadedPair`: the models, tokenizers and whatever else the draft name asked for, and each model's
                   plan
    loading.py     `load_spec`, `load_pair`, `load_model`: loading as the planner says (`specdec.planner.choose_models`)
    measuring.py   c and v(k) of a loaded pair on this machine, kept; the speedup curve they allow
    running.py     `generate`, `generate_plain`, `encode_prompt`, `speculative_generate`: a plan run, the result
                   carrying its header

This is where the zoo (models on disk) meets the engine (generation), and neither knows the other; what a run
does is decided above neither, by the planner (`specdec.planner`).
"""
