"""Benchmarks: `make bench` (or `python -m bench`). Medians of repeated runs, printed as a table.

Speed is measured here, never in timed unit tests.
"""

from __future__ import annotations

import sys
from pathlib import Path

from bench.timing import median_ms

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

def main() -> None:
    from core import catalog as catalog_mod
    from core import memory, params

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

    from core import memory, moe
    from core import speculative as sd

    alphas, gammas = np.linspace(0, 1, 201), np.arange(1, 17)

    def surface_and_ridge():
        sd.speedup_surface(alphas, gammas, 0.1)
        sd.optimal_gamma(alphas, 0.1, max_gamma=16)

    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.full(1000, 0.3))
    q = 0.7 * p + 0.3 * rng.dirichlet(np.full(1000, 0.3))

    def simulator():
        sd.simulate(p, q, 5, 100_000, seed=1)

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

    from core import layout as layout_mod
    from core.specs import ClusterSpec, Workload

    big = ClusterSpec(gpu=cat.gpu("h100-sxm"), num_nodes=144, gpus_per_node=8)

    def layouts_1152_decode():
        layout_mod.recommend(ds, big, Workload(batch=1, input_len=2000, output_len=100), "decode")

    def layouts_1152_prefill():
        layout_mod.recommend(ds, big, Workload(batch=1, input_len=2000, output_len=100), "prefill")

    from core import validation

    case = dict(next(c for c in cat.validation_cases if c["id"] == "lmsys-h100-decode-ep72"))

    def predict_one():
        validation.predict(case)

    from core import offload

    hosts = list(cat.hosts.values())

    def single_box():
        offload.single_box_options(ds, hosts, dict(cat.gpus), "q4_k_m", context_len=8192)

    rows = [
        (f"catalog load, cold ({len(cat.models)} models, {len(cat.gpus)} GPUs, {len(cat.hosts)} hosts)", median_ms(cold_catalog)),
        ("layout search, 1,152 H100 (DeepSeek-V3), decode", median_ms(layouts_1152_decode, repeat=3)),
        ("layout search, 1,152 H100 (DeepSeek-V3), prefill", median_ms(layouts_1152_prefill, repeat=3)),
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

    import logging

    logging.getLogger("streamlit").setLevel(logging.ERROR)
    from streamlit.testing.v1 import AppTest

    pages = ["app.py", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "pages").glob("*.py"))]
    for page in pages:
        at = AppTest.from_file(str(ROOT / page), default_timeout=60)
        at.run()  # warm-up: imports and caches

        def rerun(at=at):
            at.run()

        rows.append((f"page script rerun: {page} (AppTest)", median_ms(rerun, repeat=5)))

    width = max(len(r[0]) for r in rows)
    print(f"{'benchmark':<{width}}  median (ms)")
    for name, ms in rows:
        print(f"{name:<{width}}  {ms:10.1f}")


if __name__ == "__main__":
    main()
