"""Generate tests/fixtures/eplb_reference.json from DeepSeek's reference EPLB.

The reference (deepseek-ai/EPLB, file eplb.py, MIT licence) is NOT part of this project: it is
imported from a path given on the command line, and only the numbers it produces are stored.
It needs PyTorch, so run this with a Python that has torch (not the project's .venv):

    mkdir -p /tmp/eplb_ref
    git -C <mirror of deepseek-ai/EPLB> show HEAD:eplb.py > /tmp/eplb_ref/eplb.py
    python bench/eplb_reference_fixtures.py --reference /tmp/eplb_ref/eplb.py \
        --commit <EPLB commit> --out tests/fixtures/eplb_reference.json

Each case stores the weight exactly as it was passed to the reference (float32 values written as
the exact doubles they equal), the arguments, the policy the reference picks, and its outputs.
`same_with_stable_sort` tells whether the outputs stay the same when every `Tensor.sort` inside the
reference is forced to `stable=True`: torch's CPU `sort(stable=False)` is libstdc++'s `std::sort`
(introsort), which keeps ties in order only for rows of at most 16 elements.

This module imports torch only inside functions, so `bench.eplb_vs_reference` can reuse the
case builders below without torch.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

import numpy as np

README_WEIGHT = [
    [90, 132, 40, 61, 104, 165, 39, 4, 73, 56, 183, 86],
    [20, 107, 104, 64, 19, 197, 187, 157, 172, 86, 16, 27],
]
README_PHY2LOG = [
    [5, 6, 5, 7, 8, 4, 3, 4, 10, 9, 10, 2, 0, 1, 11, 1],
    [7, 10, 6, 8, 6, 11, 8, 9, 2, 4, 5, 1, 5, 0, 3, 1],
]


def load_reference(path: str | Path):
    """Import the reference eplb.py from a file path (it needs torch)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"EPLB reference not found: {path}")
    spec = importlib.util.spec_from_file_location("eplb_reference", path)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def _f32(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float32)


def continuous_weight(rng: np.random.Generator, layers: int, experts: int, kind: str) -> np.ndarray:
    """Continuous loads, rounded to 4 decimals, then cast through float32."""
    if kind == "lognormal":
        w = rng.lognormal(mean=3.0, sigma=1.0, size=(layers, experts))
    else:
        w = rng.exponential(scale=50.0, size=(layers, experts))
    return _f32(np.round(w, 4))


def zipf_weight(seed: int, layers: int = 58, experts: int = 256, s: float = 1.1) -> np.ndarray:
    """DeepSeek-V3-like skewed loads: Zipf-like by rank, lognormal noise, random expert order."""
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, experts + 1, dtype=np.float64)
    out = np.empty((layers, experts))
    for layer in range(layers):
        base = 100_000.0 * ranks ** (-s) * rng.lognormal(0.0, 0.3, size=experts)
        out[layer] = base[rng.permutation(experts)]
    return _f32(np.round(out, 4))


def v3_weight() -> np.ndarray:
    """The 58 x 256 weight of the DeepSeek-V3-like cases (also used by bench.eplb_vs_reference)."""
    return zipf_weight(seed=2024)


# (name, layers, experts, groups, nodes, gpus, replicas, weight kind)
HIERARCHICAL = [
    ("hier_L1_E16_G4_N2_gpu4_R16", 1, 16, 4, 2, 4, 16, "lognormal"),
    ("hier_L2_E16_G8_N4_gpu8_R24", 2, 16, 8, 4, 8, 24, "exponential"),
    ("hier_L2_E16_G4_N2_gpu4_R64", 2, 16, 4, 2, 4, 64, "lognormal"),
    ("hier_L3_E32_G4_N1_gpu4_R40", 3, 32, 4, 1, 4, 40, "exponential"),
    ("hier_L4_E32_G8_N2_gpu8_R32", 4, 32, 8, 2, 8, 32, "lognormal"),
    ("hier_L6_E32_G16_N4_gpu16_R48", 6, 32, 16, 4, 16, 48, "exponential"),
    ("hier_L3_E32_G8_N4_gpu32_R32", 3, 32, 8, 4, 32, 32, "lognormal"),
    ("hier_L2_E64_G8_N2_gpu8_R80", 2, 64, 8, 2, 8, 80, "lognormal"),
    ("hier_L5_E64_G4_N4_gpu8_R64", 5, 64, 4, 4, 8, 64, "exponential"),
    ("hier_L3_E64_G16_N4_gpu32_R96", 3, 64, 16, 4, 32, 96, "lognormal"),
    ("hier_L1_E256_G8_N1_gpu8_R264", 1, 256, 8, 1, 8, 264, "exponential"),
    ("hier_L4_E256_G8_N2_gpu16_R288", 4, 256, 8, 2, 16, 288, "lognormal"),
    ("hier_L2_E256_G32_N4_gpu64_R320", 2, 256, 32, 4, 64, 320, "exponential"),
]

GLOBAL = [
    ("glob_L3_E24_G3_N2_gpu4_R32", 3, 24, 3, 2, 4, 32, "lognormal"),
    ("glob_L2_E60_G5_N2_gpu8_R64", 2, 60, 5, 2, 8, 64, "exponential"),
    ("glob_L4_E16_G2_N4_gpu8_R24", 4, 16, 2, 4, 8, 24, "lognormal"),
    ("glob_L2_E32_G4_N8_gpu8_R32", 2, 32, 4, 8, 8, 32, "exponential"),
    ("glob_L5_E64_G8_N3_gpu12_R72", 5, 64, 8, 3, 12, 72, "lognormal"),
    ("glob_L2_E256_G8_N3_gpu24_R264", 2, 256, 8, 3, 24, 264, "exponential"),
    ("glob_L3_E48_G6_N4_gpu16_R64", 3, 48, 6, 4, 16, 64, "lognormal"),
    ("glob_L2_E20_G1_N2_gpu4_R28", 2, 20, 1, 2, 4, 28, "exponential"),
]

# small integer loads (0-20) so that ties occur; "equal" = every load the same
TIES = [
    ("ties_hier_L4_E32_G8_N2_gpu8_R40", 4, 32, 8, 2, 8, 40, "int"),
    ("ties_hier_L2_E64_G8_N4_gpu16_R80", 2, 64, 8, 4, 16, 80, "int"),
    ("ties_glob_L4_E24_G3_N2_gpu8_R32", 4, 24, 3, 2, 8, 32, "int"),
    ("ties_hier_equal_L2_E32_G4_N2_gpu8_R48", 2, 32, 4, 2, 8, 48, "equal"),
    ("ties_glob_equal_L2_E24_G3_N2_gpu8_R40", 2, 24, 3, 2, 8, 40, "equal"),
]


def build_cases(seed: int = 20240601) -> list[dict]:
    """Inputs of every case (no outputs): name, weight (float32 array) and the four arguments."""
    rng = np.random.default_rng(seed)
    cases = [dict(name="readme", weight=_f32(README_WEIGHT), num_replicas=16, num_groups=4, num_nodes=2, num_gpus=8)]
    for name, layers, experts, groups, nodes, gpus, replicas, kind in HIERARCHICAL + GLOBAL + TIES:
        if kind == "int":
            w = _f32(rng.integers(0, 21, size=(layers, experts)))
        elif kind == "equal":
            w = np.full((layers, experts), 7.0, dtype=np.float32)
        else:
            w = continuous_weight(rng, layers, experts, kind)
        cases.append(
            dict(name=name, weight=w, num_replicas=replicas, num_groups=groups, num_nodes=nodes, num_gpus=gpus)
        )
    w = v3_weight()
    cases.append(
        dict(name="v3_L58_E256_G8_N4_gpu32_R288", weight=w, num_replicas=288, num_groups=8, num_nodes=4, num_gpus=32)
    )
    cases.append(
        dict(
            name="v3_global_L58_E256_G8_N3_gpu24_R288",
            weight=w,
            num_replicas=288,
            num_groups=8,
            num_nodes=3,
            num_gpus=24,
        )
    )
    for c in cases:
        experts = c["weight"].shape[1]
        assert c["num_replicas"] % c["num_gpus"] == 0 and c["num_replicas"] >= experts, c["name"]
        if c["num_groups"] % c["num_nodes"] == 0:
            assert experts % c["num_groups"] == 0 and c["num_gpus"] % c["num_nodes"] == 0, c["name"]
        if not c["name"].startswith("ties_") and c["name"] != "readme":
            # continuous cases: no two experts of a layer share a load (ties only between replicas)
            assert all(len(np.unique(row)) == experts for row in c["weight"]), c["name"]
    return cases


def policy(num_groups: int, num_nodes: int) -> str:
    return "hierarchical" if num_groups % num_nodes == 0 else "global"


def run_reference(ref, case: dict, stable_sort: bool = False):
    """Run the reference on one case; returns (phy2log, log2phy, logcnt) as nested lists."""
    import torch

    orig_sort = torch.Tensor.sort
    if stable_sort:

        def sort(self, dim=-1, descending=False):
            return orig_sort(self, dim=dim, descending=descending, stable=True)

        torch.Tensor.sort = sort
    try:
        out = ref.rebalance_experts(
            torch.from_numpy(case["weight"].copy()),
            case["num_replicas"],
            case["num_groups"],
            case["num_nodes"],
            case["num_gpus"],
        )
    finally:
        torch.Tensor.sort = orig_sort
    return tuple(t.tolist() for t in out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference", required=True, help="path to DeepSeek's eplb.py")
    ap.add_argument("--out", required=True, help="JSON file to write")
    ap.add_argument("--commit", default=None, help="EPLB commit the reference file was taken from")
    args = ap.parse_args(argv)

    import torch

    ref = load_reference(args.reference)
    commit = args.commit or "unknown"
    cases_out = []
    for case in build_cases():
        t0 = time.perf_counter()
        phy2log, log2phy, logcnt = run_reference(ref, case)
        ms = (time.perf_counter() - t0) * 1000
        stable = run_reference(ref, case, stable_sort=True)
        same = stable == (phy2log, log2phy, logcnt)
        if case["name"] == "readme":
            ok = phy2log == README_PHY2LOG
            print(f"readme: phy2log {'matches' if ok else 'DIFFERS FROM'} the README's printed output")
            if not ok:
                return 1
        print(
            f"{case['name']:<40} {policy(case['num_groups'], case['num_nodes']):<12} {ms:9.1f} ms"
            f"  same_with_stable_sort={same}"
            + (
                ""
                if same
                else f" (phy2log {'same' if stable[0] == phy2log else 'differs'},"
                f" log2phy {'same' if stable[1] == log2phy else 'differs'})"
            )
        )
        cases_out.append(
            {
                "name": case["name"],
                "policy": policy(case["num_groups"], case["num_nodes"]),
                "weight": [[float(v) for v in row] for row in case["weight"]],
                "num_replicas": case["num_replicas"],
                "num_groups": case["num_groups"],
                "num_nodes": case["num_nodes"],
                "num_gpus": case["num_gpus"],
                "phy2log": phy2log,
                "log2phy": log2phy,
                "logcnt": logcnt,
                "same_with_stable_sort": same,
            }
        )

    header = {
        "reference": f"deepseek-ai/EPLB@{commit} eplb.py",
        "torch": torch.__version__,
        "notes": (
            "Outputs of DeepSeek's reference rebalance_experts on CPU. Weights are float32 values "
            "(written as exact doubles). torch's CPU sort(stable=False) is libstdc++ std::sort "
            "(introsort; ties keep their order only in rows of <= 16 elements); "
            "same_with_stable_sort says whether forcing stable=True changes nothing."
        ),
    }
    sep = (",", ":")
    lines = [json.dumps(header, separators=sep)[:-1] + ',"cases":[']
    lines.append(",\n".join(json.dumps(c, separators=sep) for c in cases_out))
    lines.append("]}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {len(cases_out)} cases to {out} ({out.stat().st_size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
