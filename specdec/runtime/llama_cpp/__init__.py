"""GGUF models on llama.cpp's own CPU kernels, exact bit for bit: the llama.cpp runtime.

    from specdec.runtime.llama_cpp import check_runtime, load_gguf

    ok, why = check_runtime()                    # this machine's self-test verdict (kept after the first run)
    model = load_gguf(path)                      # a `specdec.engine.model.Model`: rows(), vocab_size, traits, ...
    logits, _ = model.rows([0]).feed([prompt_ids])

One concept per module, from the bottom up:

    generate_declarations.py   the script that writes declarations.py from the pinned llama.h (gcc checks the layout)
    cdef.py                    the names the runtime uses, and the cutting of their declarations out of the headers
    declarations.py            generated: cffi's declarations, the structs' layout, llama.cpp's defaults
    library.py                 find, load and check the library (cffi ABI mode; no `import xllamacpp`)
    settings.py                the exact settings, each with the measurement behind it
    views.py                   token trees as sequence ids (one view per new token), and what llama.cpp cannot draw
    context.py                 one llama.cpp context: passes, sequence ids, dropped cells, repacking
    rows.py                    the `Rows` contract on a context: several texts, trees, keep, rollback, compact
    model.py                   the `Model` contract: load_gguf, traits, weight bytes
    tiny_model.py              a tiny Q4_K/Q6_K GGUF written here, for the self-test and the tests
    self_test.py               the machine proves exactness before use, in a subprocess; the verdict is kept

Importing this package loads nothing: the library is opened by the first `load_gguf`.
"""

from specdec.runtime.llama_cpp.model import LlamaCppModel, load_gguf
from specdec.runtime.llama_cpp.self_test import check_runtime
from specdec.runtime.llama_cpp.settings import EXACT, FASTEST, LLAMA_DEFAULTS, Settings

__all__ = ["EXACT", "FASTEST", "LLAMA_DEFAULTS", "LlamaCppModel", "Settings", "check_runtime", "load_gguf"]
