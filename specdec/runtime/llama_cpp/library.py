"""llama.cpp's C library, loaded once per process through cffi, checked against the header it was declared from.

The library is the extension module of the `xllamacpp` wheel (`xllamacpp/xllamacpp.abi3.so`): its Python API
is a server, but the module exports llama.cpp's whole C API, and cffi in ABI mode calls it directly
(`ffi.dlopen`). The package is never imported (its `__init__` would start nothing we need); the file is found
through `importlib.util.find_spec`, which reads the package's location without running it.

Loading does four things, once:

1. how its OpenMP threads wait was decided when the package was imported (`specdec.store.machine.wait_policy_here`:
   spin a while on a quiet machine, sleep at once beside other work), before torch: libgomp reads it once, when it
   starts, and torch's wheel brings its own `libgomp.so.1`, which the library then shares (same soname);
2. the library is opened and `llama_backend_init` called;
3. its logging is silenced (`llama_log_set` with a callback that drops every line): a model load prints
   hundreds of lines to stderr otherwise;
4. the declarations (`declarations.py`, generated from the pinned header) are checked: cffi's size and offsets of
   every checked struct must be the ones gcc gave, and `llama_model_default_params()` /
   `llama_context_default_params()` must return the recorded values field by field. A library from another
   llama.cpp generation fails here, in one line, instead of reading a flag from the wrong byte.

    >>> describe_mismatch({"a": 1, "b": "0x1p+0"}, {"a": 1, "b": 1.0}, "defaults")
    >>> describe_mismatch({"a": 1}, {"a": 2}, "defaults")
    'defaults: a is 2 here, 1 in the header this runtime was generated from'

Every failure is a `SpecdecError` whose one line says what to do. Not handled: more than one library per
process (the first one loaded stays), other wheels' builds (`declarations.VERSION` is the one pinned).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from specdec.errors import SpecdecError
from specdec.runtime.llama_cpp import declarations

INSTALL = "pip install -r requirements.txt (it pins xllamacpp and cffi)"


@dataclass(frozen=True)
class Library:
    """The loaded library: cffi's `ffi`, the library handle `lib`, and where it was loaded from."""

    ffi: object
    lib: object
    path: Path


_loaded: Library | None = None
_keep_alive: list[object] = []  # the log callback must outlive every call into the library


def library_path() -> Path:
    """The library this process loads: `$SPECDEC_LLAMA_LIBRARY` when it names a file; else the build for this CPU that
    `specdec runtime build` proved and recorded (`native`), unless that variable says "wheel"; else the wheel's."""
    from specdec.runtime.llama_cpp import native

    asked = os.environ.get(native.ENVIRONMENT, "")
    if asked and asked != "wheel":
        if not Path(asked).is_file():
            raise SpecdecError(f"{native.ENVIRONMENT}={asked} names no file: unset it, or give a built libllama.so")
        return Path(asked)
    built = None if asked == "wheel" else native.recorded_library()
    return built if built is not None else wheel_library()


def wheel_library() -> Path:
    """The wheel's extension module, found without importing `xllamacpp` (a `SpecdecError` when it is not installed)."""
    try:
        spec = importlib.util.find_spec(declarations.PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise SpecdecError(
            f"the llama.cpp runtime needs {declarations.PACKAGE}=={declarations.VERSION}, which is not "
            f"installed: {INSTALL}"
        )
    for location in spec.submodule_search_locations:
        path = Path(location) / f"{declarations.PACKAGE}.abi3.so"
        if path.is_file():
            return path
    raise SpecdecError(f"{declarations.PACKAGE} is installed but has no {declarations.PACKAGE}.abi3.so: {INSTALL}")


def installed_version() -> str | None:
    """The installed xllamacpp's version, from its metadata (None when it has none)."""
    try:
        return importlib.metadata.version(declarations.PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return None


def describe_mismatch(recorded: dict, found: dict, what: str) -> str | None:
    """None when every recorded value is found (floats recorded
    as C's %a hex), else the first difference, in one line."""
    for name, value in recorded.items():
        have = found.get(name)
        same = float.fromhex(value) == have if isinstance(value, str) and value not in ("set",) else value == have
        if not same:
            return f"{what}: {name} is {have} here, {value} in the header this runtime was generated from"
    return None


def _struct_defaults(ffi, struct, cdata) -> dict:
    """A struct's fields as `declarations.DEFAULTS` records them: pointers None or "set", floats, bools as 0/1."""
    values = {}
    for name, field in ffi.typeof(struct).fields:
        value = getattr(cdata, name)
        if field.type.kind in ("pointer", "function"):
            values[name] = None if value == ffi.NULL else "set"
        elif field.type.cname in ("float", "double"):
            values[name] = float(value)
        else:
            values[name] = int(value)
    return values


def check_declarations(ffi, lib) -> None:
    """Refuse (one line) a library whose structs or defaults are not the ones the pinned header gave."""
    for struct, recorded in declarations.LAYOUT.items():
        fields = dict(ffi.typeof(f"struct {struct}").fields)
        found = {"size": ffi.sizeof(f"struct {struct}")}
        found.update({name: [ffi.offsetof(f"struct {struct}", name), ffi.sizeof(fields[name].type)] for name in fields})
        wanted = {"size": recorded["size"], **recorded["fields"]}
        reason = describe_mismatch(wanted, found, f"struct {struct}")
        if reason:
            raise SpecdecError(
                f"the llama.cpp declarations do not match their header ({reason}): regenerate them with "
                "python -m specdec.runtime.llama_cpp.generate_declarations"
            )
    for struct, function in (
        ("llama_model_params", lib.llama_model_default_params),
        ("llama_context_params", lib.llama_context_default_params),
    ):
        reason = describe_mismatch(
            declarations.DEFAULTS[struct], _struct_defaults(ffi, f"struct {struct}", function()), f"{struct} defaults"
        )
        if reason:
            raise SpecdecError(
                f"this xllamacpp ({installed_version()}) is not the build the runtime was generated "
                f"for ({declarations.VERSION}): {reason}; {INSTALL}"
            )


def load_library() -> Library:
    """The process's llama.cpp library, loaded and checked on first call (module docstring)."""
    global _loaded
    if _loaded is not None:
        return _loaded
    try:
        import cffi
    except ImportError:
        raise SpecdecError(f"the llama.cpp runtime needs cffi, which is not installed: {INSTALL}") from None
    path = library_path()
    ffi = cffi.FFI()
    ffi.cdef(declarations.CDEF)
    try:
        lib = ffi.dlopen(str(path))
    except OSError as error:
        raise SpecdecError(
            f"llama.cpp's library did not load ({str(error).splitlines()[0]}); on Debian or Ubuntu it "
            "needs libgomp1 and libstdc++6 (apt-get install libgomp1)"
        ) from None
    check_declarations(ffi, lib)

    @ffi.callback("void(enum ggml_log_level, const char *, void *)")
    def silent(level, text, user_data):  # every log line dropped
        return None

    _keep_alive.append(silent)
    lib.llama_log_set(silent, ffi.NULL)
    lib.llama_backend_init()
    _loaded = Library(ffi, lib, path)
    return _loaded
