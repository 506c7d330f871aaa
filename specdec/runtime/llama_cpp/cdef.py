"""The cdef: the declarations cffi needs from llama.cpp's C API, cut by name out of llama.h and ggml's headers.

What the runtime uses is listed by name (`FUNCTIONS`, `STRUCTS`, `ENUMS`, the typedefs they use, and the
structs only ever reached through a pointer, declared opaque: `OPAQUE`); `cdef_text` cuts exactly those
declarations out of the headers' text, comments and export macros stripped, in an order where each is
declared before use. `specdec.runtime.llama_cpp.generate_declarations` runs it on the pinned sdist's
headers, has gcc check the layout, and writes `declarations.py`.
"""

from __future__ import annotations

import re

# What the runtime uses, by name: the generator cuts exactly these out of the headers.
GGML_TYPEDEFS = [
    "ggml_backend_dev_t",
    "ggml_backend_buffer_type_t",
    "ggml_backend_sched_eval_callback",
    "ggml_abort_callback",
    "ggml_log_callback",
]
GGML_ENUMS = ["ggml_type", "ggml_log_level"]
LLAMA_TYPEDEFS = ["llama_memory_t", "llama_pos", "llama_token", "llama_seq_id", "llama_progress_callback"]
ENUMS = [
    "llama_vocab_type",
    "llama_rope_scaling_type",
    "llama_pooling_type",
    "llama_attention_type",
    "llama_flash_attn_type",
    "llama_split_mode",
    "llama_load_mode",
    "llama_lazy_mode",
    "llama_context_type",
]
STRUCTS = ["llama_batch", "llama_model_params", "llama_context_params"]  # their layout is checked
OPAQUE = [
    "ggml_tensor",
    "ggml_backend_device",
    "ggml_backend_buffer_type",
    "llama_memory_i",
    "llama_vocab",
    "llama_model",
    "llama_context",
    "llama_model_kv_override",
    "llama_model_tensor_buft_override",
    "llama_sampler_seq_config",
]  # reached through pointers only
FUNCTIONS = [
    "llama_backend_init",
    "llama_log_set",
    "llama_print_system_info",
    "llama_model_default_params",
    "llama_context_default_params",
    "llama_model_load_from_file",
    "llama_model_free",
    "llama_init_from_model",
    "llama_free",
    "llama_model_get_vocab",
    "llama_vocab_n_tokens",
    "llama_vocab_eos",
    "llama_vocab_bos",
    "llama_vocab_is_eog",
    "llama_model_n_ctx_train",
    "llama_model_n_embd",
    "llama_model_n_layer",
    "llama_model_n_swa",
    "llama_model_size",
    "llama_model_n_params",
    "llama_model_desc",
    "llama_model_meta_val_str",
    "llama_model_is_recurrent",
    "llama_model_is_hybrid",
    "llama_model_has_encoder",
    "llama_n_ctx",
    "llama_n_batch",
    "llama_n_ubatch",
    "llama_n_seq_max",
    "llama_set_n_threads",
    "llama_n_threads",
    "llama_n_threads_batch",
    "llama_get_memory",
    "llama_memory_clear",
    "llama_memory_seq_rm",
    "llama_memory_seq_cp",
    "llama_memory_seq_keep",
    "llama_memory_seq_pos_min",
    "llama_memory_seq_pos_max",
    "llama_batch_init",
    "llama_batch_free",
    "llama_decode",
    "llama_get_logits_ith",
    "llama_synchronize",
    "llama_state_seq_get_size",
    "llama_state_seq_get_data",
    "llama_state_seq_set_data",
]


def strip_comments(text: str) -> str:
    """C source without its comments.

    >>> strip_comments("int a; // one\\n/* two */ int b;")
    'int a; \\n int b;'
    """
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def braced(text: str, head: str) -> str:
    """The declaration that starts with the regex `head` and runs to the `;` after its matching `}`.

    >>> braced("x; enum e { A = 1, B }; y;", r"enum e\\s*\\{")
    'enum e { A = 1, B };'
    """
    match = re.search(head, text)
    if match is None:
        raise SystemExit(f"no declaration matching {head!r} in the header")
    depth, at = 0, match.start()
    for at in range(match.start(), len(text)):
        depth += {"{": 1, "}": -1}.get(text[at], 0)
        if text[at] == "}" and depth == 0:
            break
    return text[match.start() : text.index(";", at) + 1]


def statement(text: str, head: str) -> str:
    """The declaration that starts with the regex `head` and ends at the next `;` (a typedef, a prototype)."""
    match = re.search(head, text)
    if match is None:
        raise SystemExit(f"no declaration matching {head!r} in the header")
    return text[match.start() : text.index(";", match.start()) + 1]


def typedef_of(name: str) -> str:
    """A regex for the typedef that declares `name`: `typedef T NAME;` or a function pointer `typedef R (*NAME)(...);`.

    >>> text = "typedef void (*f_t)(g_t x); typedef struct g * g_t;"
    >>> statement(text, typedef_of("g_t"))
    'typedef struct g * g_t;'
    """
    return rf"typedef [^;]*?(?:\(\s*\*\s*{name}\s*\)[^;]*|\b{name}\s*);"


def tidy(declaration: str) -> str:
    """One declaration, its whitespace collapsed and its export macro dropped."""
    declaration = re.sub(r"\b(LLAMA_API|GGML_API|GGML_BACKEND_API)\s+", "", declaration)
    return re.sub(r"\s+", " ", declaration).strip()


def cdef_text(llama: str, ggml: dict[str, str]) -> str:
    """The declarations cffi needs, cut by name out of the headers, in an order where each is declared before use."""
    llama, ggml_text = strip_comments(llama), strip_comments("\n".join(ggml[name] for name in sorted(ggml)))
    lines = [f"struct {name};" for name in OPAQUE]
    lines += [tidy(statement(ggml_text, typedef_of(name))) for name in GGML_TYPEDEFS if name != "ggml_log_callback"]
    lines += [tidy(braced(ggml_text, rf"enum {name}\s*\{{")) for name in GGML_ENUMS]
    lines.append(tidy(statement(ggml_text, typedef_of("ggml_log_callback"))))  # after the enum it uses
    lines += [tidy(statement(llama, typedef_of(name))) for name in LLAMA_TYPEDEFS]
    lines += [tidy(braced(llama, rf"enum {name}\s*\{{")) for name in ENUMS]
    lines.append(tidy(braced(llama, r"typedef struct llama_batch\s*\{")))
    lines += [tidy(braced(llama, rf"struct {name}\s*\{{")) for name in STRUCTS if name != "llama_batch"]
    for name in FUNCTIONS:
        lines.append(tidy(statement(llama, rf"LLAMA_API\s+[^;()]*?\b{name}\s*\(")))
    return "\n".join(lines) + "\n"
