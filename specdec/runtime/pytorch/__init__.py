"""The torch runtime: any transformers causal LM on a CPU, CUDA or MPS, behind the model contract.

    torch_model.py   `TorchModel`: a transformers model as the loop sees it (traits, rows, hidden states, layers)
    kv_cache.py      `CachedModel`: one text's KV cache, fed, kept and rolled back
    batch_cache.py   `BatchCache`: ragged rows in one cache, each with its own length
    one_row.py       `OneRow`: one text's cache seen as a batch of one

The llama.cpp runtime is its sibling (`specdec.runtime.llama_cpp`); each is one entry of `specdec.runtimes`.
"""
