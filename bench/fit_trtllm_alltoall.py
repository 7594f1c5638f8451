"""Fit TensorRT-LLM's wide-EP all-to-all (its own NVLink kernels, not DeepEP) as the planner times a low-latency
all-to-all (issue 35): one MoE layer's dispatch + combine = ``2 x latency_us + bytes / (900 GB/s x scale_up_eff)``
(core.perf.dispatch, every top-k copy sent to its expert's GPU), on NVIDIA aiconfigurator 0.12.0's measured table
``gb200/comm/trtllm/1.3.0rc10/trtllm_alltoall_perf.parquet`` (TensorRT-LLM 1.2.0rc6 on GB200: NVLinkOneSided
dispatch + combine, NVLinkTwoSided prepare + dispatch + combine; NVFP4 dispatch, BF16 combine; hidden 7168, top-8 of
256). The points used: EP 8 / 16 / 32 (the decode layouts wide EP runs), 1-1,024 tokens per GPU. The result is
``b200@trtllm``'s ``alltoall_low_latency`` in catalogs/efficiency.yaml.

    python -m bench.fit_trtllm_alltoall --data-dir <site-packages>/aiconfigurator_core/systems/data

Reads the parquet with pandas (bench only; the planner never imports aiconfigurator)."""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TABLE = "gb200/comm/trtllm/1.3.0rc10/trtllm_alltoall_perf.parquet"
EPS = (8, 16, 32)
MAX_TOKENS = 1024
HIDDEN, TOP_K = 7168, 8
OPS = {  # the calls one MoE layer makes with each kernel
    "NVLinkOneSided": ("alltoall_dispatch", "alltoall_combine"),
    "NVLinkTwoSided": ("alltoall_prepare", "alltoall_dispatch", "alltoall_combine"),
}


def points(data_dir: Path) -> list[tuple[str, int, int, float, float]]:
    """(kernel, EP, tokens per GPU, measured us per layer, bytes per layer sent off the GPU)."""
    import pandas as pd

    from core.perf.dispatch import token_copy_bytes

    df = pd.read_parquet(data_dir / TABLE)
    df = df[(df.moe_dtype == "nvfp4") & df.moe_ep_size.isin(EPS) & (df.num_tokens <= MAX_TOKENS)]
    out = []
    for (src, ep, t), g in df.groupby(["kernel_source", "moe_ep_size", "num_tokens"]):
        ops = dict(zip(g.op_name, g.latency * 1000.0, strict=True))  # AIC's latency column is milliseconds
        copy_bytes = token_copy_bytes(HIDDEN, "nvfp4") + token_copy_bytes(HIDDEN, "bf16")
        sent = t * TOP_K * copy_bytes * (ep - 1) / ep
        out.append((str(src), int(ep), int(t), sum(ops[o] for o in OPS[str(src)]), sent))
    return out


def fit(rows, bw_gbps: float) -> tuple[float, float]:
    """(latency_us, scale_up_eff) minimising the squared log error, by a coarse then a fine grid."""

    def loss(lat, eff):
        return sum(math.log((2 * lat + b / (eff * bw_gbps * 1e3)) / m) ** 2 for _, _, _, m, b in rows)

    best = min((loss(lat, eff), lat, eff) for lat in range(5, 41) for eff in (x / 100 for x in range(30, 121)))
    _, lat0, eff0 = best
    fine = ((lat0 + i / 10, eff0 + j / 1000) for i in range(-10, 11) for j in range(-10, 11))
    return min((loss(lat, eff), lat, eff) for lat, eff in fine)[1:]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, required=True, help="aiconfigurator_core/systems/data of an AIC install")
    args = ap.parse_args(argv)
    from core.catalog import load_catalog

    bw = load_catalog().gpu("gb200").scale_up_bw_gbps
    rows = points(args.data_dir)
    lat, eff = fit(rows, bw)
    print(f"latency_us {lat:.1f}  scale_up_eff {eff:.3f}  ({len(rows)} points, NVLink {bw:.0f} GB/s)")
    for src in (None, *OPS):
        sel = [r for r in rows if src is None or r[0] == src]
        errs = sorted(abs((2 * lat + b / (eff * bw * 1e3)) / m - 1) for _, _, _, m, b in sel)
        p90 = errs[math.ceil(0.9 * len(errs)) - 1]
        print(f"  {src or 'both':15s} n={len(sel):3d} |error| median {statistics.median(errs):.1%} P90 {p90:.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
