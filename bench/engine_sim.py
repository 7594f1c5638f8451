"""Engine simulator speed (issue 35): a 10-point closed-loop frontier (1, 2, 4, ..., 512 clients) of 2,000 measured
requests per point should take about a second. Medians of repeated runs, with the ratio to that 1 s target.

    python -m bench.engine_sim            # the table below; `python -m bench core` includes its rows
    python -m bench.engine_sim --repeat 9

Every scenario is DeepSeek-V3 FP8 on one 8 x H200 replica (vLLM efficiencies), its step costs built once, outside
the timing, by core.serving.replica_costs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.timing import median_ms  # noqa: E402

TARGET_MS = 1000.0
REQUESTS = 2000


def scenarios() -> list[tuple[str, object]]:
    """(label, a call to time) for each scenario."""
    from core import serving
    from core.catalog import load_catalog
    from core.deployment.bundle import Deployment
    from core.deployment.specs import ParallelLayout
    from core.serving.engine_sim import EngineKnobs, Lengths, closed_frontier, open_sweep
    from core.serving.workload_profiles import profile

    cat = load_catalog()
    ds, h200, eff = cat.model("deepseek-v3"), cat.gpu("h200"), cat.efficiency_for("h200", "vllm")
    chat = profile("chat")

    def costs(layout: ParallelLayout, wl, **spec) -> serving.ReplicaCosts:
        return serving.replica_costs(Deployment(ds, h200, layout, "fp8", eff, workload=wl), **spec)

    dp8 = ParallelLayout(attention_dp=8, ep=8)
    tp8 = ParallelLayout(attention_tp=8, ep=8)
    chat_costs = costs(dp8, chat.workload())
    chat_lengths, chat_knobs = Lengths.from_profile(chat), EngineKnobs(prefix_hit=chat.prefix_reuse)
    k1, k8 = Lengths.exact(1024, 1024), Lengths.exact(8192, 1024)
    k1_costs = costs(tp8, k1_wl := chat.workload().model_copy(update={"input_len": 1024, "output_len": 1024}))
    k8_costs = costs(tp8, k1_wl.model_copy(update={"input_len": 8192}))
    mtp_costs = costs(tp8, k1_wl, draft_tokens=1, accepted_length=1.8)
    cap = chat_costs.kv_capacity
    return [
        (
            f"frontier, chat profile (lognormal, prefix 0.4), DP-attn8 EP8, decode first ({cap:,}-sequence cache)",
            lambda: closed_frontier(chat_costs, chat_lengths, knobs=chat_knobs, requests=REQUESTS),
        ),
        (
            "frontier, chat profile, prefill first",
            lambda: closed_frontier(
                chat_costs, chat_lengths, knobs=EngineKnobs(prefix_hit=0.4, policy="prefill_first"), requests=REQUESTS
            ),
        ),
        ("frontier, fixed 1k/1k, TP8 EP8", lambda: closed_frontier(k1_costs, k1, requests=REQUESTS)),
        ("frontier, fixed 8k/1k, TP8 EP8", lambda: closed_frontier(k8_costs, k8, requests=REQUESTS)),
        (
            "frontier, fixed 1k/1k, MTP 1 draft (1.8 accepted)",
            lambda: closed_frontier(mtp_costs, k1, requests=REQUESTS),
        ),
        (
            "10 Poisson rates (2-20 req/s), chat profile, DP-attn8 EP8",
            lambda: open_sweep(
                chat_costs, chat_lengths, [2.0 * i for i in range(1, 11)], chat_knobs, requests=REQUESTS
            ),
        ),
    ]


def rows(repeat: int = 5) -> list[tuple[str, float]]:
    """(label, median ms) per scenario, labelled for `python -m bench`'s core table."""
    return [(f"engine sim: {label}", median_ms(fn, repeat=repeat)) for label, fn in scenarios()]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5, help="runs per scenario (the median is reported)")
    args = ap.parse_args(argv)
    out = [(label, median_ms(fn, repeat=args.repeat)) for label, fn in scenarios()]
    width = max(len(label) for label, _ in out)
    print(f"10 points x {REQUESTS:,} measured requests; target {TARGET_MS:,.0f} ms per sweep")
    print(f"{'scenario':<{width}}  {'median (ms)':>11}  {'/ target':>8}")
    for label, ms in out:
        print(f"{label:<{width}}  {ms:11.1f}  {ms / TARGET_MS:8.3f}")


if __name__ == "__main__":
    main()
