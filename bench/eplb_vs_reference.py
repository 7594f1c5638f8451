"""Time core.balance.rebalance_experts against DeepSeek's reference EPLB, and check they agree.

    EPLB_REFERENCE=/path/to/eplb.py python -m bench.eplb_vs_reference

Run from the repository root with a Python that has PyTorch (the reference needs it; the
project's .venv does not). EPLB_REFERENCE (or --reference) must point to the reference file,
deepseek-ai/EPLB's eplb.py, which is not part of this project, e.g.

    git -C <mirror of deepseek-ai/EPLB> show HEAD:eplb.py > /tmp/eplb_ref/eplb.py

Cases: the DeepSeek-V3-like load (58 layers x 256 experts, 288 slots, 8 groups) on 4 nodes x 8 GPUs
(hierarchical policy) and on 3 nodes x 8 GPUs (global policy). Prints the median of 5 runs of each
in ms, the ratio reference / ours, and whether phy2log, log2phy and logcnt are identical.
Exits 0 with a message when torch, the reference or core.balance is missing; 1 on a mismatch.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.eplb_reference_fixtures import load_reference, v3_weight  # noqa: E402
from bench.timing import median_ms  # noqa: E402

REPEAT = 5
CASES = [
    # name, num_replicas, num_groups, num_nodes, num_gpus
    ("V3-like 58x256, 288 slots, 4 nodes x 8 GPUs (hierarchical)", 288, 8, 4, 32),
    ("V3-like 58x256, 288 slots, 3 nodes x 8 GPUs (global)", 288, 8, 3, 24),
]


def _as_np(x) -> np.ndarray:
    if hasattr(x, "detach"):  # a torch tensor
        x = x.detach().cpu().numpy()
    return np.asarray(x)


def same_outputs(a, b) -> list[str]:
    """Names of the outputs that differ (shape or values)."""
    bad = []
    for name, x, y in zip(("phy2log", "log2phy", "logcnt"), a, b, strict=False):
        x, y = _as_np(x), _as_np(y)
        if x.shape != y.shape or not np.array_equal(x, y):
            bad.append(name)
    return bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="core.balance vs DeepSeek's reference EPLB")
    ap.add_argument(
        "--reference", default=os.environ.get("EPLB_REFERENCE"), help="path to eplb.py (default: $EPLB_REFERENCE)"
    )
    args = ap.parse_args(argv)

    try:
        import torch
    except ImportError:
        print(
            "SKIP: PyTorch is not installed in this Python, and the reference EPLB needs it.\n"
            "Run with a Python that has torch, e.g. `EPLB_REFERENCE=/path/to/eplb.py "
            "/path/to/torch-venv/bin/python -m bench.eplb_vs_reference` (from the repository root)."
        )
        return 0
    if not args.reference or not Path(args.reference).is_file():
        print(
            f"SKIP: reference EPLB not found ({args.reference or 'EPLB_REFERENCE is not set'}).\n"
            "Set EPLB_REFERENCE=/path/to/eplb.py (deepseek-ai/EPLB's eplb.py) or pass --reference."
        )
        return 0
    ref = load_reference(args.reference)

    try:
        from core.balance import rebalance_experts as ours
    except ImportError as exc:
        print(f"NOTE: core.balance.rebalance_experts is not importable ({exc}); timing the reference only.")
        ours = None

    weight = v3_weight()  # float32, 58 x 256
    rows, mismatches = [], []
    for name, replicas, groups, nodes, gpus in CASES:
        w_ref = torch.from_numpy(weight.copy())
        ref_out = ref.rebalance_experts(w_ref, replicas, groups, nodes, gpus)  # warm-up
        args = (replicas, groups, nodes, gpus)
        ref_ms = median_ms(lambda w=w_ref, a=args: ref.rebalance_experts(w, *a), REPEAT)
        if ours is None:
            rows.append((name, ref_ms, None, "n/a"))
            continue
        w_ours = weight.copy()
        our_out = ours(w_ours, replicas, groups, nodes, gpus)
        our_ms = median_ms(lambda w=w_ours, a=args: ours(w, *a), REPEAT)
        bad = same_outputs(ref_out, our_out)
        if bad:
            mismatches.append(name)
        rows.append((name, ref_ms, our_ms, "yes" if not bad else "NO: " + ", ".join(bad) + " differ"))

    width = max(len(r[0]) for r in rows)
    print(f"torch {torch.__version__}, reference {args.reference}, median of {REPEAT} runs")
    print(f"{'case':<{width}}  {'reference (ms)':>14}  {'ours (ms)':>10}  {'ref/ours':>8}  equal")
    for name, ref_ms, our_ms, eq in rows:
        ours_s = f"{our_ms:10.1f}" if our_ms is not None else f"{'-':>10}"
        ratio = f"{ref_ms / our_ms:8.1f}" if our_ms else f"{'-':>8}"
        print(f"{name:<{width}}  {ref_ms:14.1f}  {ours_s}  {ratio}  {eq}")
    if mismatches:
        print(f"MISMATCH in {len(mismatches)} case(s)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
