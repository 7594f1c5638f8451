"""Operating points side by side (issue #19): for the same layout, the largest decode batch that meets a TPOT
target and the output tokens/s per GPU it gives, from the planner's layout search
(:func:`core.serving.operating_point.operating_point`) and from NVIDIA aiconfigurator 0.12.0 (AIC).

AIC is optional and separate (see ``bench/aic_compare.py``)::

    /tmp/aicenv/bin/python -m bench.aic_operating_points           # prints the table (markdown)

AIC side: ``cli_estimate(mode="static")`` with balanced expert routing (what the planner assumes) at
ISL 4,000 / OSL 1,000, on a grid of global batches (sequences per GPU 1 ... 1,024 times the layout's GPUs);
its operating point is the largest batch whose TPOT meets the target, within the KV capacity the planner
computes for the layout at the full context (AIC's static-mode out-of-memory flag prices a prefill of the
whole batch in one pass, which continuous batching never runs, so it is not the decode limit). Planner side: the layout's operating point as the Layouts page computes it (largest batch per GPU
whose KV cache fits at the full context and whose step meets the target, with or without two-batch overlap),
on the same stack. Without aiconfigurator it prints one line and exits 0.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass

from bench.aic_compare import ISL, OSL, PLANNER_WEIGHTS, Config, aic_session

TARGET_S = 0.100  # TPOT
PER_GPU = (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)


def _configs() -> list[Config]:
    """The issue's scenarios AIC's tables cover (one node or one NVLink domain), with the search's top plans."""
    dsv3, q235, oss = "deepseek-v3", "qwen3-235b-a22b", "gpt-oss-120b"
    return [
        Config("dsv3-h200-dp8ep8", dsv3, "h200", "sglang", 1, 8, 8, 1, 0, deepep=True, kv=None),
        Config("dsv3-h200-tp8", dsv3, "h200", "sglang", 8, 1, 1, 8, 0),
        Config("dsv3-h200-dp8ep8-trt", dsv3, "h200", "trtllm", 1, 8, 8, 1, 0),
        Config("dsv3-h100-dp16ep16", dsv3, "h100-sxm", "sglang", 1, 16, 16, 1, 0, kv=None),
        Config("q235-h100-tp2dp4-ep2etp4-trt", q235, "h100-sxm", "trtllm", 2, 4, 2, 4, 0),
        Config("q235-h100-tp2dp4-ep8", q235, "h100-sxm", "sglang", 2, 4, 8, 1, 0),
        Config("q235-h100-dp8ep8", q235, "h100-sxm", "sglang", 1, 8, 8, 1, 0),
        Config("gptoss120-h100-tp1", oss, "h100-sxm", "sglang", 1, 1, 1, 1, 0),
        Config("gptoss120-h200-tp1", oss, "h200", "sglang", 1, 1, 1, 1, 0),
        Config("gptoss120-h100-dp8ep8-trt", oss, "h100-sxm", "trtllm", 1, 8, 8, 1, 0),
    ]


@dataclass(frozen=True)
class Point:
    name: str
    layout: str
    aic_per_gpu: float | None
    aic_tps: float | None
    planner_per_gpu: float | None
    planner_tps: float | None
    overlap: str

    @property
    def ratio(self) -> float | None:
        """planner / AIC tokens/s per GPU."""
        return None if not (self.aic_tps and self.planner_tps) else self.planner_tps / self.aic_tps


def aic_point(aic, c: Config, cap: float) -> tuple[float, float] | None:
    """(sequences per GPU, output tokens/s per GPU) at AIC's largest batch within the target and ``cap``
    sequences per GPU, or None."""
    grid = sorted({*(b for b in PER_GPU if b < cap), cap})
    best = None
    lo, hi = 0, len(grid) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        batch = max(c.dp, round(grid[mid] * c.gpus / c.dp) * c.dp)
        try:
            r = aic.estimate(Config(**{**c.__dict__, "batch": batch}), balanced=True)
            ok = r.ms["decode"] / 1e3 <= TARGET_S
        except Exception as e:  # no table for this shape
            print(f"  {c.name} b={batch}: {type(e).__name__}", file=sys.stderr)
            ok, r = False, None
        if ok:
            per_gpu = batch / c.gpus
            best = (per_gpu, per_gpu / (r.ms["decode"] / 1e3))
            lo = mid + 1
        else:
            hi = mid - 1
    return best


def planner_point(c: Config):
    from core.catalog import load_catalog
    from core.deployment.specs import ParallelLayout, Precision, Workload
    from core.serving.operating_point import operating_point

    cat = load_catalog()
    weights, experts = PLANNER_WEIGHTS.get(c.model, ("fp8", None))
    prec = Precision(weights=weights, routed_experts=experts, kv_cache="bf16", dispatch="fp8")
    lay = ParallelLayout(attention_tp=c.tp, attention_dp=c.dp, ep=c.ep, expert_tp=c.etp)
    gpu = cat.gpu(c.gpu)
    red = (-cat.model(c.model).moe.n_routed_experts) % c.ep
    from core import memory
    from core.deployment.bundle import Deployment
    from core.deployment.specs import MemoryAssumptions

    wl, a = Workload(batch=1, input_len=ISL, output_len=OSL), MemoryAssumptions(redundant_experts=red)
    d = Deployment(cat.model(c.model), gpu, lay, prec, cat.efficiency_for(c.gpu, c.stack), workload=wl, assumptions=a)
    seqs = memory.max_concurrent_sequences(d, ISL + OSL)
    cap = seqs / lay.gpus_per_stage
    return cap, operating_point(d, "decode", target_s=TARGET_S)  # the GPU's own scale-up domain (no cluster)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.parse_args()
    try:
        import aiconfigurator  # noqa: F401
    except ImportError:
        print("aiconfigurator is not installed in this interpreter: nothing to compare (see the module docstring)")
        return 0
    points = []
    with aic_session() as aic:
        for c in _configs():
            cap, p = planner_point(c)
            a = aic_point(aic, c, cap)
            ok = not isinstance(p, str)
            points.append(
                Point(
                    c.name,
                    c.layout_label(c.deepep),
                    a[0] if a else None,
                    a[1] if a else None,
                    p.tokens_per_gpu if ok else None,
                    p.tokens_per_s_per_gpu if ok else None,
                    p.overlap if ok else p,
                )
            )
            print(f"  {points[-1]}", file=sys.stderr)
    print(f"Decode operating points at TPOT <= {TARGET_S * 1e3:.0f} ms, ISL {ISL} / OSL {OSL}, balanced routing\n")
    print(
        "| configuration | layout | AIC seqs/GPU | AIC tok/s/GPU | planner seqs/GPU | planner tok/s/GPU | planner / AIC |"
    )
    print("|---|---|---|---|---|---|---|")
    for p in points:
        r = f"{p.ratio:.2f}" if p.ratio else "-"
        print(
            f"| {p.name} | {p.layout} | {p.aic_per_gpu or 0:,.3g} | {p.aic_tps or 0:,.0f} | "
            f"{p.planner_per_gpu or 0:,.3g} | {p.planner_tps or 0:,.0f} | {r} |"
        )
    ratios = [p.ratio for p in points if p.ratio]
    if ratios:
        within = sum(1 for r in ratios if abs(r - 1) <= 0.25)
        med = statistics.median(abs(r - 1) for r in ratios)
        print(f"\n{within} of {len(ratios)} within 25% of AIC's tokens/s per GPU; median |difference| {100 * med:.0f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
