"""Fit the prefill cost of a DSA indexer layer on NVIDIA aiconfigurator's measured SGLang tables (issue 35).

aiconfigurator-core times SGLang 0.5.14's whole DSA attention module in prefill (``dsa_context_module_perf``: the
projections, the indexer, the sparse MLA and the output projection of one layer) twice: with the indexer
(``sglang_dsa_indexer_<backend>``) and with its top-k handed in (``sglang_dsa_skip_indexer_<backend>``). The
difference at equal heads, TP, batch and prompt length is what the indexer costs in prefill: its FP8 logits over the
causal context, the top-k and their launches, on every TP rank (its weights are replicated). Per GPU this script
takes the difference at batch 1 on prompts past the top-k (4,096-16,384 tokens, the sparse regime), averages it
over the tables' heads x TP rows at each length, and fits ``floor_s + per_token_s x tokens`` per layer by
least squares (relative error reported). The backend is the FP8-KV one the InferenceX recipes run (``trtllm`` on
Blackwell, ``flashmla_kv`` on Hopper) with FP8 block GEMMs, as those recipes serve FP8 checkpoints: with bf16 GEMMs
the indexer runs in bf16 and costs about four times as much (B200, 8k prompt: 8.8 against 2.2 ms per layer). Only
B200's table holds both variants in that configuration: the indexer variant on GLM-5-FP8, the skip variant on
GLM-5.2-FP8, whose attention layer is GLM-5's (hidden 6,144, 64 heads, q LoRA 2,048, KV LoRA 512, nope / RoPE / V
192 / 64 / 256, indexer 32 x 128, top-k 2,048 in both config.json files), so the pair is taken across the two at
equal heads per rank, TP and length. B300 / GB200 / GB300 measured the skip variant with bf16 GEMMs only; H100 and H200
hold the pair at 4,096 and 8,192 tokens only, where two numbers fit two points exactly and check nothing, and the two
disagree fivefold (0.44 against 0.08 us per token): B200, at three lengths, is the one GPU fitted.

Needs pandas with a parquet engine and a checkout of ai-dynamo/aiconfigurator; the app never reads the tables:

    python -m bench.fit_dsa_prefill /path/to/aiconfigurator            # print the fit
    python -m bench.fit_dsa_prefill /path/to/aiconfigurator --write    # write catalogs/dsa_prefill.yaml
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import yaml

from bench.aic_tables import DATA, AicTables, fit_relative

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "catalogs" / "dsa_prefill.yaml"
VERSION = "0.5.14"
# catalog GPU id -> (aiconfigurator system folder, the FP8-KV sparse backend SGLang runs there)
SYSTEMS = {
    "b200": ("b200_sxm", "trtllm"),
    "b300": ("b300_sxm", "trtllm"),
    "gb200": ("gb200", "trtllm"),
    "gb300": ("gb300", "trtllm"),
    "h100-sxm": ("h100_sxm", "flashmla_kv"),
    "h200": ("h200_sxm", "flashmla_kv"),
}
PAIR = ("zai-org/GLM-5-FP8", "zai-org/GLM-5.2-FP8")  # the indexer variant's model, the skip variant's (one layer)
MIN_TOKENS = 4096  # past the 2,048-token top-k: the sparse path (shorter prompts run dense MHA, no indexer top-k)


def indexer_points(df, backend: str) -> list[tuple[int, float, int]]:
    """(prompt tokens, mean indexer ms per layer over the heads x TP rows, rows) at batch 1 for one GPU's table."""
    df = df[(df.batch_size == 1) & (df.isl >= MIN_TOKENS) & (df.kv_cache_dtype == "fp8")]
    keys = ["num_heads", "tp_size", "isl"]
    sub = df[df.gemm_type == "fp8_block"]
    with_indexer = sub[(sub.kernel_source == f"sglang_dsa_indexer_{backend}") & (sub.model == PAIR[0])]
    skipped = sub[(sub.kernel_source == f"sglang_dsa_skip_indexer_{backend}") & (sub.model == PAIR[1])]
    full = with_indexer.groupby(keys).latency.mean()
    skip = skipped.groupby(keys).latency.mean()
    by = (full - skip).dropna().reset_index().groupby("isl").latency
    return [(int(t), float(m), int(n)) for (t, m), n in zip(by.mean().items(), by.size(), strict=True)]


def fit(points: list[tuple[int, float, int]]) -> tuple[float, float]:
    """``floor_s, per_token_s`` minimising the relative error of ``floor + per_token x tokens`` (ms in, s out),
    the floor held at 0 or above."""
    t = np.array([p[0] for p in points], float)
    y = np.array([p[1] for p in points], float)
    floor, per = fit_relative([np.ones_like(t), t], y)
    return floor / 1e3, per / 1e3


def main(argv: list[str] | None = None) -> int:

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("repo", type=Path, help="a checkout (or bare clone) of ai-dynamo/aiconfigurator")
    ap.add_argument("--write", action="store_true", help=f"write {OUT.relative_to(ROOT)}")
    args = ap.parse_args(argv)

    tables = AicTables(args.repo)
    commit = tables.commit
    gpus = {}
    for gpu, (folder, backend) in SYSTEMS.items():
        rel = f"{DATA}/{folder}/sparse_attention/sglang/{VERSION}/dsa_context_module_perf.parquet"
        df = tables.read(rel)
        if df is None:
            raise SystemExit(f"{rel} is not in {args.repo} at {commit[:12]}")
        pts = indexer_points(df, backend)
        if len(pts) < 3:  # two lengths fit two numbers exactly and check nothing (H100 and H200 disagree 5x)
            print(f"{gpu:9s} {backend:11s} FP8 pair at {len(pts)} length(s) only: not fitted ({pts})")
            continue
        floor_s, per_s = fit(pts)
        errs = [abs((floor_s + per_s * t) * 1e3 / m - 1) for t, m, _ in pts]
        print(
            f"{gpu:9s} {backend:11s} floor {floor_s * 1e3:.3f} ms + {per_s * 1e6:.3f} us per token per layer; "
            f"|error| max {max(errs):.0%}; " + ", ".join(f"{t}: {m:.3f} ms ({n} rows)" for t, m, n in pts)
        )
        gpus[gpu] = {
            "backend": backend,
            "floor_s": round(floor_s, 7),
            "per_token_s": round(per_s, 10),
            "max_rel_error": round(max(errs), 4),
            "path": rel,
            "points": [{"tokens": t, "indexer_ms": round(m, 4), "rows": n} for t, m, n in pts],
        }
    if args.write:
        from core.catalog import load_catalog

        ref_bw = load_catalog().gpu("b200").hbm_bytes_per_s
        doc = {
            "notes": (
                "The prefill cost of one DSA indexer layer (DeepSeek-V3.2, GLM-5): floor_s + per_token_s x the "
                "prompt tokens a rank processes, on prompts longer than the indexer's top-k. Fitted by "
                "bench/fit_dsa_prefill.py on NVIDIA aiconfigurator's measured SGLang 0.5.14 tables "
                "(dsa_context_module_perf: the attention module with the indexer less the same module with its "
                "top-k handed in, batch 1, averaged over the tables' heads x TP rows). Read by "
                "core/hardware/dsa_prefill.py; a GPU not listed takes B200's per-token cost scaled by HBM "
                "bandwidth (B200 / the GPU's)."
            ),
            "source": {
                "repository": "ai-dynamo/aiconfigurator",
                "commit": commit,
                "framework": f"SGLang {VERSION}",
            },
            "reference": {"gpu": "b200", "hbm_bytes_per_s": ref_bw},
            "gpus": gpus,
        }
        OUT.write_text(yaml.safe_dump(doc, sort_keys=False, width=120), encoding="utf-8")
        print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
