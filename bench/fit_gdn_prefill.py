"""Fit the prefill cost of a Gated DeltaNet layer on NVIDIA aiconfigurator's measured tables, per stack (issue 35).

A GDN layer (Qwen3.5, Qwen3-Next) has no K/V cache to attend over: in prefill it runs a causal depthwise conv over
its q/k/v channels (``causal_conv1d_fn``) and the chunked gated delta rule (``chunk_gated_delta_rule``, FlashInfer's
Blackwell kernel where there is one), whose FLOPs are small beside the projections, so the planner's kernel
accounting priced it at nothing. aiconfigurator times both kernels (``linear_attention/<stack>/<version>/gdn_perf``,
phase ``context``) on Qwen3.5's layer geometry (128-wide heads, four value heads per key head) at 4-64 value heads per
rank and prompts of 1,024-32,768 tokens, under each stack's kernels: on a B200 at 8,192 tokens and 64 heads vLLM
0.24.0 (FlashInfer's Blackwell kernel) takes 0.48 ms, SGLang 0.5.14 (FLA's Triton kernel) 1.07 ms, TensorRT-LLM
1.3.0rc20 0.89 ms. Per stack and GPU this script sums the two kernels at batch 1 (the median of duplicated cells),
takes every heads x length cell from 1,024 tokens up, and fits ``floor_s + tokens x (per_token_s + per_token_head_s x
value heads per rank)`` per layer by least squares on the relative error (the floor held at 0 or above).

Needs pandas with a parquet engine and a checkout (or bare clone) of ai-dynamo/aiconfigurator; the app never reads
the tables:

    python -m bench.fit_gdn_prefill /path/to/aiconfigurator            # print the fit
    python -m bench.fit_gdn_prefill /path/to/aiconfigurator --write    # write catalogs/gdn_prefill.yaml
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import yaml

from bench.aic_tables import DATA, AicTables, fit_relative

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "catalogs" / "gdn_prefill.yaml"
STACKS = {
    "vllm": ("vllm", "0.24.0", "vLLM"),
    "sglang": ("sglang", "0.5.14", "SGLang"),
    "trtllm": ("trtllm", "1.3.0rc20", "TensorRT-LLM"),
}
SYSTEMS = {
    "b200": "b200_sxm",
    "b300": "b300_sxm",
    "gb200": "gb200",
    "gb300": "gb300",
    "h100-sxm": "h100_sxm",
    "h200": "h200_sxm",
}
GEOMETRY = 4  # value heads per key head (Qwen3.5 / Qwen3-Next); rows of other ratios are left out
KERNELS = ("causal_conv1d_fn", "chunk_gated_delta_rule")  # prefixes: the second is FlashInfer's or FLA's
MIN_TOKENS = 1024
REFERENCE = "b200"
FALLBACK = "vllm"  # the stack whose fit a stack without one takes (core/hardware/gdn_prefill.py)


def cells(df) -> list[tuple[int, int, float]]:
    """(tokens, value heads per rank, conv + delta-rule ms per layer) at batch 1 from one GPU's table."""
    df = df[
        (df.num_v_heads == GEOMETRY * df.num_k_heads)
        & (df.head_k_dim == 128)
        & (df.head_v_dim == 128)
        & (df.phase == "context")
        & (df.batch_size == 1)
        & (df.seq_len >= MIN_TOKENS)
    ]
    out = []
    for (t, h), g in df.groupby(["seq_len", "num_v_heads"]):
        parts = [g[g.kernel_source.str.startswith(k)].latency for k in KERNELS]
        if all(len(p) for p in parts):
            out.append((int(t), int(h), float(sum(p.median() for p in parts))))
    return out


def fit(points: list[tuple[int, int, float]]) -> tuple[float, float, float]:
    """``floor_s, per_token_s, per_token_head_s`` minimising the relative error (ms in, s out)."""
    t = np.array([p[0] for p in points], float)
    h = np.array([p[1] for p in points], float)
    y = np.array([p[2] for p in points], float)
    floor, per, per_head = fit_relative([np.ones_like(t), t, t * h], y)
    return floor / 1e3, per / 1e3, per_head / 1e3


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("aiconfigurator", type=Path, help="a checkout (or bare clone) of ai-dynamo/aiconfigurator")
    ap.add_argument("--write", action="store_true", help=f"write {OUT.relative_to(ROOT)}")
    args = ap.parse_args(argv)
    tables = AicTables(args.aiconfigurator)
    stacks = {}
    for stack, (folder, version, name) in STACKS.items():
        gpus = {}
        for gpu, system in SYSTEMS.items():
            rel = f"{DATA}/{system}/linear_attention/{folder}/{version}/gdn_perf.parquet"
            df = tables.read(rel)
            if df is None:
                print(f"{stack} {gpu}: no {rel}")
                continue
            pts = cells(df)
            if len({h for _, h, _ in pts}) < 2:
                print(f"{stack} {gpu}: fewer than two head counts in {rel}")
                continue
            floor, per, per_head = fit(pts)
            errs = [(floor + t * (per + per_head * h)) * 1e3 / ms - 1 for t, h, ms in pts]
            gpus[gpu] = {
                "floor_s": float(f"{floor:.4g}"),
                "per_token_s": float(f"{per:.4g}"),
                "per_token_head_s": float(f"{per_head:.4g}"),
                "max_rel_error": round(max(abs(e) for e in errs), 4),
                "path": rel,
                "cells": len(pts),
            }
            print(
                f"{stack:7s} {gpu:9s} floor {floor * 1e6:6.2f} us  per token {per * 1e9:6.2f} ns + "
                f"{per_head * 1e12:7.1f} ps x heads   {len(pts)} cells, |error| median "
                f"{np.median(np.abs(errs)):.1%} max {max(abs(e) for e in errs):.1%}"
            )
        if REFERENCE not in gpus:  # TensorRT-LLM 1.3.0rc20 measured one head count at batch 1: no per-head term
            print(f"{stack}: no fit on the reference GPU {REFERENCE}; the stack takes {FALLBACK}'s")
            continue
        stacks[stack] = {"framework": f"{name} {version}", "gpus": gpus}
    doc = {
        "notes": (
            "The prefill cost of one Gated DeltaNet layer (Qwen3.5, Qwen3-Next) per serving stack: floor_s + tokens x "
            "(per_token_s + per_token_head_s x value heads per rank), the causal conv and the chunked gated delta rule, "
            "whose FLOPs the kernel accounting leaves out. Fitted by bench/fit_gdn_prefill.py on NVIDIA aiconfigurator's "
            "measured tables (gdn_perf, phase context, batch 1, Qwen3.5's head geometry at 4-64 value heads per rank, "
            f"{MIN_TOKENS:,}-32,768 tokens). Read by core/hardware/gdn_prefill.py; a GPU not listed takes the "
            "reference GPU's cost scaled by HBM bandwidth (the reference's / the GPU's); a stack not listed (TensorRT-LLM "
            f"1.3.0rc20 measured one head count) takes {FALLBACK}'s."
        ),
        "source": {"repository": "ai-dynamo/aiconfigurator", "commit": tables.commit},
        "reference": {"gpu": REFERENCE, "hbm_bytes_per_s": _hbm(REFERENCE)},
        "fallback_stack": FALLBACK,
        "stacks": stacks,
    }
    if args.write:
        OUT.write_text(yaml.safe_dump(doc, sort_keys=False, width=120), encoding="utf-8")
        print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


def _hbm(gpu: str) -> float:
    sys.path.insert(0, str(ROOT))
    from core.catalog import load_catalog

    return float(load_catalog().gpu(gpu).hbm_bytes_per_s)


if __name__ == "__main__":
    raise SystemExit(main())
