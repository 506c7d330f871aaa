"""What a GGUF file's metadata says of its weights, read without loading the model or its tokenizer.

A GGUF file names the quantization its weights are in (`general.file_type`: "Q4_K_M", "F32", ...);
the llama.cpp runtime runs a file's own weights and reports them by that name (`specdec.runtimes.on_llama_cpp`).
Reading the model itself is `specdec.zoo.gguf_files`'s.
"""

from __future__ import annotations

from pathlib import Path

from specdec.errors import SpecdecError


def gguf_file_type(path: str | Path) -> str:
    """The quantization a GGUF file says its weights are in ("Q4_K_M", "F32", ...), from its metadata; "GGUF" when it
    does not say.

    >>> gguf_file_type(Path(__file__))
    Traceback (most recent call last):
    ...
    specdec.errors.SpecdecError: cannot read the GGUF metadata of gguf_metadata.py: fetch the file again
    """
    import gguf
    from transformers.integrations.gguf.reader import read_gguf_metadata

    try:
        value = read_gguf_metadata(str(path))[0].get("general.file_type")
    except (ValueError, OSError, KeyError):
        raise SpecdecError(f"cannot read the GGUF metadata of {Path(path).name}: fetch the file again") from None
    if value is None:
        return "GGUF"
    try:
        return gguf.LlamaFileType(int(value)).name.removeprefix("MOSTLY_").replace("ALL_", "")
    except ValueError:
        return f"GGUF type {value}"
