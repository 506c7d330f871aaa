"""Write `declarations.py` from the pinned llama.cpp header: what cffi needs, and the layout a C compiler gives it.

    python -m specdec.runtime.llama_cpp.generate_declarations              # fetch the sdist from the package index
    python -m specdec.runtime.llama_cpp.generate_declarations --sdist xllamacpp-2026.10.11549.tar.gz

cffi in ABI mode (`ffi.dlopen`) never sees a header: it trusts the declarations it is given to say how big a
struct is and where each field sits. A declaration copied by hand from another llama.cpp generation would still
load and still call, and would write `use_extra_bufts` into the byte where the library reads `no_host`. So the
declarations are not typed in; this script makes them, once, from the header of the very version pinned in
requirements.txt, and checks them the only way that settles it, with a C compiler:

1. the sdist of `xllamacpp==VERSION` comes from the package index (PEP 691 JSON, SHA-256 checked): its
   `src/llama.cpp/include/llama.h` and ggml's headers under `thirdparty/llama.cpp/ggml/include`;
2. the declarations cffi needs are cut out of those headers by name (`ENUMS`, `STRUCTS`, `FUNCTIONS`, the
   typedefs they use: `specdec.runtime.llama_cpp.cdef`), comments and export macros stripped; structs only ever
   reached through a pointer are declared opaque;
3. a small C file compiled against the same headers (gcc, here and now; never at install) prints the size of
   `llama_model_params`, `llama_context_params` and `llama_batch` and every field's offset and size, and, linked
   into the installed wheel's library, the values `llama_model_default_params()` and
   `llama_context_default_params()` return, field by field;
4. cffi parses the declarations and must agree with the compiler on every size and offset, or nothing is written;
5. `declarations.py` is written (and committed): the cdef text, that layout, those defaults.

At first use `specdec.runtime.llama_cpp.library` checks cffi's layout and the library's defaults against the
recorded ones and refuses, in one line, a library that does not match the header it was generated from.

Not handled: other platforms' layouts (the wheel pinned is the manylinux x86-64 one; the compiler here
is the judge), and functions this runtime does not call (add a name to `cdef.FUNCTIONS` and run the script again).
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import importlib.util
import json
import pprint
import subprocess
import sys
import tarfile
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path

from specdec.runtime.llama_cpp.cdef import FUNCTIONS, STRUCTS, cdef_text

PACKAGE, VERSION = "xllamacpp", "2026.10.11549"
SDIST = f"{PACKAGE}-{VERSION}.tar.gz"
SDIST_SHA256 = "c17ee1163006f70726abb9f72137830818f3d8cb60bfc34cb232d08428eaa22b"
INDEX = "https://pypi.org/simple"
LLAMA_HEADER = f"{PACKAGE}-{VERSION}/src/llama.cpp/include/llama.h"
GGML_HEADERS = f"{PACKAGE}-{VERSION}/thirdparty/llama.cpp/ggml/include/"
OUTPUT = Path(__file__).with_name("declarations.py")


def fetch_sdist(folder: Path, index: str = INDEX) -> Path:
    """The pinned sdist, from the index's PEP 691 JSON listing, its SHA-256 checked."""
    page = f"{index.rstrip('/')}/{PACKAGE}/"
    request = urllib.request.Request(page, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        listing = json.load(response)
    (entry,) = [entry for entry in listing["files"] if entry["filename"] == SDIST]
    path = folder / SDIST
    with urllib.request.urlopen(urllib.parse.urljoin(page, entry["url"]), timeout=120) as response:
        path.write_bytes(response.read())
    return path


def read_headers(sdist: Path) -> tuple[str, dict[str, str]]:
    """(llama.h, {ggml header name: text}) from the sdist, after checking its SHA-256."""
    digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
    if digest != SDIST_SHA256:
        raise SystemExit(f"{sdist} has SHA-256 {digest}, not the pinned {SDIST_SHA256}")
    with tarfile.open(sdist) as archive:
        llama = archive.extractfile(LLAMA_HEADER).read().decode()
        ggml = {
            Path(member.name).name: archive.extractfile(member).read().decode()
            for member in archive.getmembers()
            if member.name.startswith(GGML_HEADERS) and member.name.endswith(".h")
        }
    return llama, ggml


def _field_kinds(ffi, struct: str) -> list[tuple[str, str]]:
    """(field, kind) of a struct as cffi reads it: kind is 'pointer', 'float', 'bool' or 'int'."""
    kinds = []
    for name, field in ffi.typeof(f"struct {struct}").fields:
        kind = field.type.kind
        cname = field.type.cname
        kinds.append(
            (
                name,
                "pointer"
                if kind in ("pointer", "function")
                else "float"
                if cname in ("float", "double")
                else "bool"
                if cname == "_Bool"
                else "int",
            )
        )
    return kinds


def layout_program(ffi) -> str:
    """C source that prints, as JSON, each checked struct's size and fields' (offset, size), and the two defaults."""
    out = [
        "#include <stddef.h>",
        "#include <stdio.h>",
        "#include <string.h>",
        '#include "llama.h"',
        "static char buffer[65536]; static size_t used;",
        "#define PUT(...) (used += snprintf(buffer + used, sizeof buffer - used, __VA_ARGS__))",
        "const char * specdec_layout(void) {",
        '  used = 0; PUT("{\\"layout\\": {");',
    ]
    for i, struct in enumerate(STRUCTS):
        out.append(
            f'  PUT("%s\\"{struct}\\": {{\\"size\\": %zu, \\"fields\\": {{", "{", " if i else ""}", '
            f"sizeof(struct {struct}));"
        )
        for j, (name, _) in enumerate(_field_kinds(ffi, struct)):
            out.append(
                f'  PUT("%s\\"{name}\\": [%zu, %zu]", "{", " if j else ""}", offsetof(struct {struct}, {name}), '
                f"sizeof(((struct {struct} *) 0)->{name}));"
            )
        out.append('  PUT("}}");')
    out.append('  PUT("}, \\"defaults\\": {");')
    for i, (struct, function) in enumerate(
        [("llama_model_params", "llama_model_default_params"), ("llama_context_params", "llama_context_default_params")]
    ):
        out.append(f'  {{ struct {struct} d = {function}(); PUT("%s\\"{struct}\\": {{", "{", " if i else ""}");')
        for j, (name, kind) in enumerate(_field_kinds(ffi, struct)):
            sep = ", " if j else ""
            if kind == "pointer":
                out.append(f'    PUT("{sep}\\"{name}\\": %s", d.{name} ? "\\"set\\"" : "null");')
            elif kind == "float":
                out.append(f'    PUT("{sep}\\"{name}\\": \\"%a\\"", (double) d.{name});')
            else:
                out.append(f'    PUT("{sep}\\"{name}\\": %lld", (long long) d.{name});')
        out.append('    PUT("}"); }')
    out += ['  PUT("}}"); return buffer;', "}"]
    return "\n".join(out) + "\n"


def installed_library() -> Path:
    """The installed wheel's extension module, found without importing the package."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{PACKAGE}=={VERSION} is not installed: pip install -r requirements.txt")
    return next(Path(location) / f"{PACKAGE}.abi3.so" for location in spec.submodule_search_locations)


def measure_layout(ffi, sdist: Path, folder: Path) -> dict:
    """Compile `layout_program` against the sdist's headers, link it to the installed library, run it: its JSON."""
    with tarfile.open(sdist) as archive:
        members = [
            member
            for member in archive.getmembers()
            if member.name == LLAMA_HEADER or (member.name.startswith(GGML_HEADERS) and member.name.endswith(".h"))
        ]
        archive.extractall(folder, members=members, filter="data")
    source = folder / "layout.c"
    source.write_text(layout_program(ffi))
    shared = folder / "layout.so"
    subprocess.run(
        [
            "gcc",
            "-shared",
            "-fPIC",
            "-O0",
            f"-I{folder / Path(LLAMA_HEADER).parent}",
            f"-I{folder / GGML_HEADERS}",
            str(source),
            "-o",
            str(shared),
        ],
        check=True,
    )
    ctypes.CDLL(str(installed_library()), mode=ctypes.RTLD_GLOBAL)  # the helper's llama_* calls resolve to it
    helper = ctypes.CDLL(str(shared))
    helper.specdec_layout.restype = ctypes.c_char_p
    return json.loads(helper.specdec_layout().decode())


def check_against_cffi(ffi, layout: dict) -> None:
    """Stop unless cffi gives every checked struct the compiler's size and every field its offset and size."""
    for struct, recorded in layout.items():
        if ffi.sizeof(f"struct {struct}") != recorded["size"]:
            raise SystemExit(
                f"cffi makes struct {struct} {ffi.sizeof(f'struct {struct}')} bytes, gcc {recorded['size']}"
            )
        for name, (offset, size) in recorded["fields"].items():
            field = dict(ffi.typeof(f"struct {struct}").fields)[name]
            if (ffi.offsetof(f"struct {struct}", name), ffi.sizeof(field.type)) != (offset, size):
                raise SystemExit(f"cffi and gcc disagree on {struct}.{name}")


def write_module(cdef: str, measured: dict) -> None:
    body = f'''"""Generated by `python -m specdec.runtime.llama_cpp.generate_declarations`: do not edit by hand.

The declarations cffi needs from llama.cpp's C API, cut from llama.h and ggml's headers in the sdist of
{PACKAGE}=={VERSION} (SHA-256 {SDIST_SHA256[:16]}...), with the layout gcc gave the checked structs there
and the defaults the library returned (floats as C's %a hex, pointers as None or "set").
"""

PACKAGE, VERSION = {PACKAGE!r}, {VERSION!r}
SDIST_SHA256 = {SDIST_SHA256!r}

CDEF = """
{cdef}"""

LAYOUT = {pprint.pformat(measured["layout"], width=116, sort_dicts=False)}

DEFAULTS = {pprint.pformat(measured["defaults"], width=116, sort_dicts=False)}
'''
    OUTPUT.write_text(body)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sdist", type=Path, help=f"a local copy of {SDIST} (default: fetch it from the index)")
    parser.add_argument("--index", default=INDEX)
    args = parser.parse_args(argv)
    import cffi

    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        sdist = args.sdist or fetch_sdist(folder, args.index)
        llama, ggml = read_headers(sdist)
        cdef = cdef_text(llama, ggml)
        ffi = cffi.FFI()
        ffi.cdef(cdef)
        measured = measure_layout(ffi, sdist, folder)
    check_against_cffi(ffi, measured["layout"])
    write_module(cdef, measured)
    sizes = ", ".join(f"{name} {value['size']}" for name, value in measured["layout"].items())
    print(f"wrote {OUTPUT} ({len(FUNCTIONS)} functions; {sizes} bytes, gcc and cffi agree)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
