"""One prepared run for a machine with a GPU: exactness on the device with tiny models, then the default pair's speed.

    python benchmarks/gpu_check.py --device cuda --out gpu-report          # both parts, a report in gpu-report/
    python benchmarks/gpu_check.py --device cpu --skip-speed               # the exactness part anywhere (a dry run)

Part 1, exactness on `--device` (tiny models built from configs, nothing downloaded; the tests' own builders):
- greedy: speculative output equals the target's own greedy output, token for token, for gpt2, llama and qwen2
  shapes, gamma 1, 3, 5 and the default schedule;
- sampled: the first round's tokens over `--runs` rows of one batched call against the target's exact law (Pearson's
  chi-square, p > 1e-3), at four decodings; and the two broken rules of `tests/test_distribution.py` (accept always,
  skip the residual) must FAIL the same test, or the check proves nothing.

Part 2, speed (`--skip-speed` leaves it out): `specdec bench` on the default pair on torch, on `--device`, four prompt
categories, 128 tokens, greedy: specdec's default (`speculative`, gamma chosen by the planner), the target alone
(`plain`, transformers' `generate`) and transformers' assisted generation as shipped (`assisted-default`). The models
come from the zoo (`specdec models fetch qwen2.5-coder-0.5b qwen2.5-coder-1.5b` first).

Writes `report.json` and `report.md` (and `bench.csv`) under `--out`; exits 1 when an exactness check fails.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the tests' tiny models and exact laws

import torch  # noqa: E402
from distribution_check import SAMPLING_IDS, SAMPLINGS, SIGNIFICANCE, speculative_fit  # noqa: E402
from test_distribution import accept_always, skip_the_residual  # noqa: E402
from tiny_models import ARCHITECTURES, tiny_pair  # noqa: E402

import specdec.engine.rounds  # noqa: E402
from specdec import autoregressive_generate, speculative_generate  # noqa: E402
from specdec.engine.sampling import SamplingConfig  # noqa: E402

GAMMAS = (1, 3, 5, None)  # None: the default schedule
SPEED = [
    "--pairs",
    "qwen2.5-coder-0.5b->qwen2.5-coder-1.5b",
    "--runtime",
    "torch",
    "--methods",
    "speculative,plain,generate,assisted-default",
    "--gammas",
    "default",
    "--categories",
    "code,summarization,qa,math",
    "--prompts-per-category",
    "1",
    "--max-new-tokens",
    "128",
    "--temperatures",
    "0",
]


def greedy_checks(device: torch.device) -> list[dict]:
    """Speculative greedy output against the target's own, per architecture and gamma."""
    checks = []
    for architecture in ARCHITECTURES:
        target, draft = (model.to(device) for model in tiny_pair(architecture, noise=0.2))  # agree often, not always
        prompt = torch.tensor([1, 2, 3, 4, 5], device=device)
        reference = autoregressive_generate(target, prompt, max_new_tokens=48, temperature=0).tokens
        for gamma in GAMMAS:
            ours = speculative_generate(target, draft, prompt, gamma=gamma, max_new_tokens=48, temperature=0)
            checks.append(
                {
                    "architecture": architecture,
                    "gamma": gamma or "default",
                    "equal": ours.tokens == reference,
                    "accepted": ours.stats.accepted,
                    "drafted": ours.stats.drafted,
                }
            )
    return checks


def sampled_checks(device: torch.device, runs: int) -> list[dict]:
    """The law at four decodings must pass; each broken rule must fail (the negative controls)."""
    target, draft = (model.to(device) for model in tiny_pair("gpt2", vocab_size=8, noise=0.4))
    checks = []
    for sampling, name in zip(SAMPLINGS, SAMPLING_IDS):
        fit, _ = speculative_fit(target, lambda: draft, sampling, runs=runs)
        checks.append(
            {"rule": "specdec's", "sampling": name, "p_value": fit.p_value, "passed": fit.p_value > SIGNIFICANCE}
        )
    correct = specdec.engine.rounds.verify_sampled
    for broken in (accept_always, skip_the_residual):
        specdec.engine.rounds.verify_sampled = broken
        try:
            fit, _ = speculative_fit(target, lambda: draft, SamplingConfig(temperature=1.0), runs=runs)
        finally:
            specdec.engine.rounds.verify_sampled = correct
        checks.append(
            {
                "rule": f"broken: {broken.__name__}",
                "sampling": "t1.0",
                "p_value": fit.p_value,
                "passed": fit.p_value < SIGNIFICANCE,
            }
        )  # a control passes when the test catches it
    return checks


def speed(device: str, out: Path) -> dict:
    """`specdec bench` on the default pair; its markdown table and the CSV's path."""
    command = [
        sys.executable,
        "-m",
        "specdec",
        "bench",
        *SPEED,
        "--device",
        device,
        "--out",
        str(out / "bench.csv"),
        "--markdown",
    ]
    done = subprocess.run(command, capture_output=True, text=True)
    return {
        "command": " ".join(command[2:]),
        "exit": done.returncode,
        "table": done.stdout.strip(),
        "errors": done.stderr.strip().splitlines()[-5:] if done.returncode else [],
    }


def markdown(report: dict) -> str:
    lines = [
        f"# GPU check: {report['device_name']}",
        "",
        f"torch {report['torch']}, {report['when']}",
        "",
        "## Greedy",
        "",
        "| architecture | gamma | equal to the target's own | accepted / drafted |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {c['architecture']} | {c['gamma']} | {'yes' if c['equal'] else '**NO**'} | {c['accepted']} / "
        f"{c['drafted']} |"
        for c in report["greedy"]
    ]
    lines += [
        "",
        f"## Sampled ({report['runs']} rows, p > {SIGNIFICANCE} passes; a broken rule must fail)",
        "",
        "| rule | decoding | p-value | as it should |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {c['rule']} | {c['sampling']} | {c['p_value']:.3g} | {'yes' if c['passed'] else '**NO**'} |"
        for c in report["sampled"]
    ]
    if "speed" in report:
        lines += [
            "",
            "## Speed",
            "",
            f"`{report['speed']['command']}` (exit {report['speed']['exit']})",
            "",
            report["speed"]["table"],
            *report["speed"]["errors"],
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="where the models run (default cuda)")
    parser.add_argument("--out", type=Path, default=Path("gpu-report"), help="the report's folder")
    parser.add_argument("--runs", type=int, default=3000, help="rows of each sampled check (the tests' 3,000)")
    parser.add_argument("--skip-speed", action="store_true", help="the exactness part only")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        parser.exit(
            2, "error: --device cuda but torch sees no CUDA device here: run it where one is, or --device cpu\n"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    report = {
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor(),
        "torch": torch.__version__,
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "runs": args.runs,
    }
    report["greedy"] = greedy_checks(device)
    report["sampled"] = sampled_checks(device, args.runs)
    if not args.skip_speed:
        report["speed"] = speed(args.device, args.out)
    (args.out / "report.json").write_text(json.dumps(report, indent=1))
    (args.out / "report.md").write_text(markdown(report))
    print(markdown(report))
    exact = all(check["equal"] for check in report["greedy"]) and all(check["passed"] for check in report["sampled"])
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())
