"""Benchmarks: `make bench` (or `python -m bench`). Medians of repeated runs, printed as a table.

    python -m bench              # both parts below
    python -m bench core         # core calls and page scripts through AppTest (in-process)
    python -m bench pages [...]  # bench/page_load.py: every page's first load in Chromium on a fresh server, and
                                 # the server's memory per session (options: python -m bench.page_load --help)

Speed is measured here, never in timed unit tests.
"""

from __future__ import annotations

import sys
from pathlib import Path

from bench.timing import median_ms

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HEAVY = {"model": "kimi-k2", "gpu": "gb200", "nodes": "18", "gpn": "4", "w": "fp8"}
HEAVY_LABEL = "Kimi K2 (1.04T) FP8 on a GB200 NVL72 rack (18 x 4 GPUs)"


def main() -> None:
    from core import catalog as catalog_mod
    from core import memory
    from core.model import params

    def cold_catalog():
        catalog_mod._load.cache_clear()
        catalog_mod.load_catalog()

    cat = catalog_mod.load_catalog()

    def all_counts():
        for m in cat.models.values():
            params.total_params(m)
            params.active_params(m)
            memory.kv_bytes_per_token(m)

    import numpy as np

    from core import moe
    from core import speculative as sd
    from core.speculative import sim as speculative_sim

    alphas, gammas = np.linspace(0, 1, 201), np.arange(1, 17)

    def surface_and_ridge():
        sd.speedup_surface(alphas, gammas, 0.1)
        sd.optimal_gamma(alphas, 0.1, max_gamma=16)

    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.full(1000, 0.3))
    q = 0.7 * p + 0.3 * rng.dirichlet(np.full(1000, 0.3))

    def simulator():
        speculative_sim.simulate(p, q, 5, 100_000, seed=1)

    ds = cat.model("deepseek-v3")
    gpus = list(cat.gpus.values())
    batches = np.geomspace(1, 65536, 200)

    def sweep():
        moe.intensity_sweep(ds, gpus, batches, "fp8")

    def min_gpu_table():
        memory.min_gpus_table(ds, gpus, {"bf16": "bf16", "fp8": "fp8", "int4": "int4", "nvfp4": "nvfp4"})

    from core import balance

    w = np.stack([balance.zipf_loads(256, 0.8, seed=i) for i in range(58)]) * 1e4

    def eplb_hier():
        balance.rebalance_experts(w, 288, 8, 4, 32)

    def eplb_global():
        balance.rebalance_experts(w, 288, 8, 3, 24)

    from core.deployment.bundle import Deployment
    from core.deployment.specs import ParallelLayout, Workload
    from core.hardware import ClusterSpec
    from core.serving import layout as layout_mod

    def search(model, cluster, wl, stack="sglang"):  # the deployment the search starts from (its layout varied)
        eff = cat.efficiency_for(cluster.gpu.id, stack)
        return Deployment(model, cluster.gpu, ParallelLayout(), "fp8", eff, cluster=cluster, workload=wl)

    big = ClusterSpec(gpu=cat.gpu("h100-sxm"), num_nodes=144, gpus_per_node=8)
    w2k = Workload(batch=1, input_len=2000, output_len=100)

    def layouts_1152_decode():
        layout_mod.recommend(search(ds, big, w2k), "decode", catalog=cat)

    def layouts_1152_prefill():
        layout_mod.recommend(search(ds, big, w2k), "prefill", catalog=cat)

    def layouts_1152_decode_trtllm():  # the largest space: TensorRT-LLM runs DP-attention with pipelines
        layout_mod.recommend(search(ds, big, w2k, "trtllm"), "decode", catalog=cat)

    from core import validation

    case = dict(next(c for c in cat.validation_cases if c["id"] == "lmsys-h100-decode-ep72"))

    def predict_one():
        validation.predict(case)

    from core.single_box import options
    from core.single_box.box import Box

    hosts = list(cat.hosts.values())
    box = Box(ds, cat.host("server-ddr5-8ch-512"), cat.gpu("rtx-4090"), 1, "q4_k_m", 8192)

    def single_box():
        options.single_box_options(box, hosts, dict(cat.gpus))

    rows = [
        (
            f"catalog load, cold ({len(cat.models)} models, {len(cat.gpus)} GPUs, {len(cat.hosts)} hosts)",
            median_ms(cold_catalog),
        ),
        ("layout search, 1,152 H100 (DeepSeek-V3), decode", median_ms(layouts_1152_decode, repeat=3)),
        ("layout search, 1,152 H100 (DeepSeek-V3), prefill", median_ms(layouts_1152_prefill, repeat=3)),
        (
            "layout search, 1,152 H100 (DeepSeek-V3), decode, TensorRT-LLM's space",
            median_ms(layouts_1152_decode_trtllm, repeat=3),
        ),
        ("validation.predict, one system-level case", median_ms(predict_one)),
        ("EPLB 58 x 256 -> 288 slots, 32 GPUs / 4 nodes (hierarchical)", median_ms(eplb_hier)),
        ("EPLB 58 x 256 -> 288 slots, 24 GPUs / 3 nodes (global)", median_ms(eplb_global)),
        ("params + KV for every model", median_ms(all_counts)),
        ("speculative surface 201 x 16 + optimal-gamma ridge", median_ms(surface_and_ridge)),
        ("simulator: 100,000 steps, vocabulary 1,000, gamma 5", median_ms(simulator, repeat=5)),
        ("intensity sweep: 15 GPUs x 200 batches (DeepSeek-V3)", median_ms(sweep)),
        ("minimum-GPU table: 15 GPUs x 4 precisions (DeepSeek-V3)", median_ms(min_gpu_table, repeat=3)),
        (f"single-box options: {len(hosts)} hosts x 4 GPU setups (DeepSeek-V3)", median_ms(single_box)),
    ]

    kimi = cat.model("kimi-k2")
    nvl72 = ClusterSpec(gpu=cat.gpu("gb200"), num_nodes=18, gpus_per_node=4)
    wk = (
        np.stack([balance.zipf_loads(kimi.moe.n_routed_experts, 0.8, seed=i) for i in range(kimi.num_moe_layers)]) * 1e4
    )

    w4k = Workload(batch=1, input_len=4096, output_len=1024)

    def layouts_nvl72_decode():
        layout_mod.recommend(search(kimi, nvl72, w4k), "decode", catalog=cat)

    def layouts_nvl72_prefill():
        layout_mod.recommend(search(kimi, nvl72, w4k), "prefill", catalog=cat)

    def eplb_kimi():
        balance.rebalance_experts(wk, 432, 1, 1, 72)  # 6 slots per GPU, 48 redundant, one NVLink domain

    rows += [
        ("layout search, Kimi K2 on GB200 NVL72 (72 GPUs), decode", median_ms(layouts_nvl72_decode, repeat=3)),
        ("layout search, Kimi K2 on GB200 NVL72 (72 GPUs), prefill", median_ms(layouts_nvl72_prefill, repeat=3)),
        (
            f"EPLB {kimi.num_moe_layers} x {kimi.moe.n_routed_experts} -> 432 slots, 72 GPUs (Kimi K2)",
            median_ms(eplb_kimi),
        ),
    ]
    from bench import engine_sim  # issue 35: the simulator's frontiers against its 1 s target

    rows += engine_sim.rows()

    import logging

    logging.getLogger("streamlit").setLevel(logging.ERROR)
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    scenarios = {"default": {}, "heavy": HEAVY}
    pages = [
        "app.py",
        *sorted(
            (str(p.relative_to(ROOT)) for p in (ROOT / "pages").glob("*.py")),
            key=lambda p: int(Path(p).name.split("_", 1)[0]),
        ),
    ]
    page_rows = []
    for page in pages:
        cells = []
        for name, query in scenarios.items():
            st.cache_data.clear()  # the first run computes this scenario's values (catalog and fits stay loaded)
            at = AppTest.from_file(str(ROOT / page), default_timeout=120)
            for k, v in query.items():
                at.query_params[k] = v
            first = median_ms(at.run, repeat=1)
            if at.exception:
                raise SystemExit(f"{page} ({name}) raised: {at.exception[0].value}")
            cells += [first, median_ms(at.run, repeat=5)]
        page_rows.append((page, *cells))

    width = max(len(r[0]) for r in rows)
    print(f"{'benchmark':<{width}}  median (ms)")
    for name, ms in rows:
        print(f"{name:<{width}}  {ms:10.1f}")
    print()
    print("page scripts through AppTest (ms): first run of the scenario, then median of 5 reruns")
    print(f"default = DeepSeek-V3 FP8 on 8 x H200; heavy = {HEAVY_LABEL}")
    pw = max(len(r[0]) for r in page_rows)
    print(f"{'page':<{pw}}  {'default first':>13}  {'default rerun':>13}  {'heavy first':>11}  {'heavy rerun':>11}")
    for page, d1, d2, h1, h2 in page_rows:
        print(f"{page:<{pw}}  {d1:13.1f}  {d2:13.1f}  {h1:11.1f}  {h2:11.1f}")
    over = [p for p, _d1, d2, _h1, h2 in page_rows if d2 > 300 or h2 > 1000]
    print("over target (rerun: 300 ms default, 1 s heavy):", ", ".join(over) or "none")

    width = max(len(r[0]) for r in rows)
    print(f"{'benchmark':<{width}}  median (ms)")
    for name, ms in rows:
        print(f"{name:<{width}}  {ms:10.1f}")


if __name__ == "__main__":
    part = sys.argv[1] if len(sys.argv) > 1 else "all"
    if part not in ("all", "core", "pages"):
        raise SystemExit("usage: python -m bench [all | core | pages [bench.page_load options]]")
    if part in ("all", "core"):
        main()
    if part in ("all", "pages"):
        from bench import page_load

        page_load.main(sys.argv[2:])
