"""Which row counts of a linear layer give the same bits per row, and what a call of M rows costs, per kernel.

For the 1.5B's five linear shapes (random weights), each kernel: the largest M up to which every call of 2..M rows
gives, row for row, the bits of that row called with one zero row beside it (a call of 2), whether a one-row call
gives those bits too, and the milliseconds of calls of 1, 2, 4, 8 and 16 rows (10 calls each, after a warm-up).
What `specdec.kernels.packed_linear.set_min_rows` rests on.

    python benchmarks/linear_rows.py
"""

from __future__ import annotations

import time

import torch

SHAPES = [(1536, 1536), (1536, 256), (1536, 8960), (8960, 1536), (1536, 151936)]  # (K, N): in, out


def kernels(weight: torch.Tensor) -> dict:
    bf16 = weight.bfloat16()
    packed_bf16 = torch.ops.mkldnn._reorder_linear_weight(bf16, 1)
    packed_fp32 = torch.ops.mkldnn._reorder_linear_weight(weight, 1)
    return {
        "float32 F.linear (MKL)": lambda x: torch.nn.functional.linear(x, weight),
        "bfloat16 F.linear": lambda x: torch.nn.functional.linear(x.bfloat16(), bf16),
        "bfloat16 packed (oneDNN)": lambda x: torch.ops.mkldnn._linear_pointwise(
            x.bfloat16(), packed_bf16, None, "none", [], ""
        ),
        "float32 packed (oneDNN)": lambda x: torch.ops.mkldnn._linear_pointwise(x, packed_fp32, None, "none", [], ""),
    }


def main() -> None:
    torch.manual_seed(0)
    print(f"threads {torch.get_num_threads()}, oneDNN bfloat16 kernels: {torch.ops.mkldnn._is_mkldnn_bf16_supported()}")
    for k, n in SHAPES:
        x = torch.randn(64, k)
        for name, f in kernels(torch.randn(n, k) * 0.02).items():
            with torch.inference_mode():
                padded = torch.cat([f(torch.cat([x[i : i + 1], torch.zeros(1, k)]))[:1] for i in range(64)])
                one_row = all(torch.equal(f(x[i : i + 1]), padded[i : i + 1]) for i in range(8))
                top = next((m - 1 for m in range(2, 65) if not torch.equal(f(x[:m]), padded[:m])), 64)
                ms = {}
                for m in (1, 2, 4, 8, 16):
                    f(x[:m])
                    start = time.perf_counter()
                    for _ in range(10):
                        f(x[:m])
                    ms[m] = round(1000 * (time.perf_counter() - start) / 10, 2)
            print(
                f"{k}x{n} {name}: rows equal for M = 2..{top}, one-row calls equal too: {one_row}; ms {ms}", flush=True
            )


if __name__ == "__main__":
    main()
