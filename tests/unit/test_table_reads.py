"""Where DeepSeek-V4.1-Flash's Engram tables live and what reading them costs a step (core.memory.host_tables), by hand.

The tables (catalogs/models/deepseek-v4.1-flash, tests/unit/test_host_tables.py): Engram at layer 1, 384,006,168
rows, and at layer 14, 384,016,682 rows, 264 B each (256 E4M3 + 8 E8M0 scales), 24 rows per token each."""

import pytest
from pydantic import ValidationError

from core import perf
from core.catalog import load_catalog
from core.deployment.bundle import Deployment
from core.deployment.specs import ParallelLayout
from core.hardware import GPUSpec, HostLink
from core.memory import host_tables
from core.model import ModelSpec

cat = load_catalog()
V41 = cat.model("deepseek-v4.1-flash")
B200, GB200, H200 = cat.gpu("b200"), cat.gpu("gb200"), cat.gpu("h200")
TOTAL = (384_006_168 + 384_016_682) * 264  # 202,758,032,400 B
D41 = Deployment(V41, B200, ParallelLayout())  # one B200, attention TP 1


# Each GPU's link to host memory and its bandwidth per direction, GB/s, written from the datasheets and system records
# (the catalog's host_link.source of each entry has the full citation). PCIe x16 per direction: Gen4 16 GT/s x 16 =
# 31.5 (32), Gen5 63 (64), Gen6 ~121-128 (128), as interconnects.yaml rounds them.
HOST_LINKS = {
    "a100-80gb": ("PCIe Gen4 x16", 32.0),  # aiconfigurator a100_sxm.yaml pcie_bw 32e9 'pcie 4.0'
    "a40": ("PCIe Gen4 x16", 32.0),  # NVIDIA A40 datasheet: PCIe 4.0 x16
    # B200 / B300 are Gen6 x16 parts, but HGX hosts' root ports are Gen5 (MLPerf v6.0 Nebius B200: 'PCIe Gen5 x16')
    "b200": ("PCIe Gen5 x16", 64.0),
    "b300": ("PCIe Gen5 x16", 64.0),
    "gb10": ("unified LPDDR5X", 273.0),  # DGX Spark: one 256-bit LPDDR5X-8533 pool, 273 GB/s (NVIDIA)
    "gb200": ("NVLink-C2C", 450.0),  # NVLink-C2C 900 GB/s bidirectional; ml-engineering: 450 per direction
    "gb300": ("NVLink-C2C", 450.0),  # as GB200; ml-engineering measures 359 / 377 GB/s H2D / D2H on a GB300
    "h100-pcie": ("PCIe Gen5 x16", 64.0),  # aiconfigurator h100_pcie.yaml pcie_bw 64e9 'PCIe Gen5 x16'
    "h100-sxm": ("PCIe Gen5 x16", 64.0),  # aiconfigurator h100_sxm.yaml 'pcie 5.0'; MLPerf XE9680 'PCIe Gen5 x16'
    "h20": ("PCIe Gen5 x16", 64.0),  # aisimulate h20_3e.yaml pcie_bw 64e9 'pcie 5.0'
    "h200": ("PCIe Gen5 x16", 64.0),  # H200 datasheet 'PCIe Gen5: 128GB/s' (bidirectional); MLPerf 'PCIe Gen5 x16'
    "h800": ("PCIe Gen5 x16", 64.0),  # aiconfigurator h800_sxm.yaml pcie_bw 64e9 'pcie 5.0'
    "l40s": ("PCIe Gen4 x16", 32.0),  # aiconfigurator l40s.yaml pcie_bw 32e9 'pcie 4.0'
    "mi300x": ("PCIe Gen5 x16", 64.0),  # AMD's MLPerf v4.1 system: 'accelerator_host_interconnect: PCIe Gen5 x16'
    "mi325x": ("PCIe Gen5 x16", 64.0),  # same CDNA3 package and platform as MI300X
    "mi355x": ("PCIe Gen5 x16", 64.0),  # AMD's MLPerf v6.0 system: 'PCIe Gen 5 x16'
    "mi455x": ("PCIe Gen5 x16", 64.0),  # assumption (no AMD figure), unverified
    "rtx-4090": ("PCIe Gen4 x16", 32.0),  # GeForce RTX 4090: PCIe 4.0 x16
    "rtx-5090": ("PCIe Gen5 x16", 64.0),  # aiconfigurator rtx_5090.yaml pcie_bw 64e9 'PCIe Gen5 x16' (not Gen6)
    "tpu-v7": ("PCIe Gen5 x16", 64.0),  # assumption (Google publishes no host-link figure), unverified
    "trainium3": ("PCIe Gen5 x16", 64.0),  # assumption (AWS publishes no host-link figure), unverified
    "vr200": ("NVLink-C2C", 900.0),  # NVLink-C2C 1.8 TB/s announced; ml-engineering: 900 per direction
}


def test_host_links():
    assert set(HOST_LINKS) == set(cat.gpus), "a new GPU needs its host link here, from its datasheet"
    for gid, expected in HOST_LINKS.items():
        assert host_tables.host_link(cat.gpu(gid)) == expected, gid


def test_every_catalog_gpu_states_its_host_link_and_where_it_was_read():
    for gid, g in cat.gpus.items():
        link = g.host_link
        assert link is not None, f"{gid}: catalogs/gpus/{gid}.yaml needs a host_link"
        assert len(link.source) > 20 and link.confidence in ("primary", "secondary", "unverified"), gid
        if link.confidence != "unverified":  # a graded figure cites where it was read
            assert "@" in link.source or "mlcommons/" in link.source or "NVIDIA" in link.source, gid
        else:
            assert "ssumption" in link.source or "announce" in link.source.lower(), gid
        if link.name.startswith("PCIe Gen"):  # the name and the figure agree: x16 at 32 / 64 / 128 GB/s
            gen = int(link.name.removeprefix("PCIe Gen").split()[0])
            assert link.name.endswith(" x16") and link.gbps_per_direction == {4: 32, 5: 64, 6: 128}[gen], gid


def test_a_gpu_without_a_host_link_falls_back_to_pcie_gen5():
    custom = GPUSpec(
        id="my-gpu",
        name="My GPU",
        hbm_capacity_gb=80,
        hbm_bandwidth_gbps=2000,
        dense_tflops={"bf16": 500},
        scale_up_bw_gbps=64,
        scale_out_bw_gbps=50,
    )
    assert custom.host_link is None
    assert host_tables.host_link(custom) == ("PCIe Gen5 x16", 64.0)
    assert host_tables.host_link(GB200.model_copy(update={"host_link": None})) == ("PCIe Gen5 x16", 64.0)
    # the host tier reads at that link: 64 tokens x 24 rows x 264 B per table at 64 GB/s x 0.5, + 5 us
    r = host_tables.table_read(Deployment(V41, custom, ParallelLayout()), "host", 64, 0.020)
    assert r.read_s == pytest.approx(2 * 405_504 / 32e9 + 5e-6, rel=1e-9)
    assert "PCIe Gen5 x16, 64 GB/s per direction" in r.where


def test_a_host_link_is_validated():
    link = dict(name="PCIe Gen5 x16", gbps_per_direction=64, source="datasheet")
    assert HostLink(**link).confidence == "unverified"
    for bad in ({"gbps_per_direction": 0}, {"gbps_per_direction": -1}, {"name": ""}, {"source": ""}, {"x": 1}):
        with pytest.raises(ValidationError):
            HostLink(**{**link, **bad})


def test_where_each_tier_keeps_the_tables():
    gpu, host, disk = host_tables.tier_costs(Deployment(V41, B200, ParallelLayout(attention_tp=2, ep=2)), 64, 0.02)
    assert TOTAL == 202_758_032_400 and gpu.table_bytes == TOTAL
    assert gpu.gpu_bytes_per_gpu == TOTAL / 2 and gpu.host_bytes_per_node == 0  # sharded over attention TP 2
    assert host.host_bytes_per_node == TOTAL and host.gpu_bytes_per_gpu == 0  # one copy per node
    assert disk.disk_bytes_per_node == TOTAL
    # 2 tables x 24 rows x 264 B = 12,672 B per token ("~13 KB of engram per token")
    assert host.bytes_per_token == 12_672 and host.rows_per_token == 48


def test_host_reads_of_a_decode_step_hide_behind_the_first_layer():
    # 64 tokens x 24 rows x 264 B = 405,504 B per table over PCIe Gen5 at 64 GB/s x 0.5: 12.672 us each, 25.344 us
    # in all + 5 us latency = 30.344 us. The layer-1 table is due after 1/40 of a 20 ms step's compute (500 us):
    # hidden; only the latency is exposed
    r = host_tables.table_read(D41, "host", 64, 0.020)
    assert r.read_s == pytest.approx(2 * 405_504 / 32e9 + 5e-6, rel=1e-9)
    assert r.exposed_s == pytest.approx(5e-6, rel=1e-9)


def test_disk_reads_of_a_prefill_chunk_are_exposed():
    # 8,192 tokens x 24 rows = 196,608 random reads per table; 8 drives x 1.5M reads/s shared by 8 GPUs = 1.5M/s
    # per GPU: 131.072 ms per table. Compute 280 ms: the layer-1 table is due at 7 ms (exposed 124.072 ms), the
    # layer-14 table (fetched after it, at 262.144 ms) at 98 ms (exposed 164.144 ms); + 100 us latency
    r = host_tables.table_read(D41, "disk", 8192, 0.280)
    assert r.read_s == pytest.approx(2 * 196_608 / 1.5e6 + 100e-6, rel=1e-9)
    assert r.exposed_s == pytest.approx(2 * 196_608 / 1.5e6 - 0.280 * 14 / 40 + 100e-6, rel=1e-9)


def test_the_step_time_adds_what_the_reads_expose():
    lay = ParallelLayout(attention_tp=1, attention_dp=8, ep=8)
    d = Deployment(V41, B200, lay, "fp8", cat.efficiency_for("b200", "sglang"))
    steps = {
        tier: perf.step_time(d, perf.StepConfig("prefill", 8192, 4096, table_tier=tier)) for tier in host_tables.TIERS
    }
    for tier, st in steps.items():
        # a 4,096-token prompt: the decoder layers replay its last 128 tokens, 1/32 of the step's tokens
        r = host_tables.table_read(d, tier, 8192, st.compute_s, replayed=128 / 4096)
        assert st.components["host_tables"] == pytest.approx(r.exposed_s, rel=1e-12)
    # the tables change nothing but their own term
    base = steps["gpu"].step_s - steps["gpu"].components["host_tables"]
    assert steps["disk"].step_s - steps["disk"].components["host_tables"] == pytest.approx(base, rel=1e-12)
    assert steps["disk"].components["host_tables"] > 0.1  # > 100 ms: NVMe random reads of an 8K chunk
    # a model without tables has no such term
    v4 = cat.model("deepseek-v4-flash")
    assert "host_tables" not in perf.step_time(d.with_(model=v4), perf.StepConfig("decode", 64, 4096)).components


def test_a_causal_encoders_prefill_puts_the_tables_due_later():
    # prefill, 128 of 1,024 prompt tokens replayed (1/8): the 20 encoder layers weigh 1 each, the 20 decoder layers
    # 1/8 each, 22.5 layers of compute in all; the layer-1 table is due after 1/22.5 of it, the layer-14 table after
    # 14/22.5. Disk tier, 8,192 tokens: 131.072 ms per table (as above); compute 225 ms: due at 10 and 140 ms;
    # exposed max(131.072 - 10, 262.144 - 140) = 122.144 ms + 100 us latency
    r = host_tables.table_read(D41, "disk", 8192, 0.225, replayed=1 / 8)
    assert r.exposed_s == pytest.approx(0.262144 - 0.140 + 100e-6, rel=1e-9)
    # every layer at full tokens (decode, or no causal encoder): due at 1/40 and 14/40 of the compute
    r = host_tables.table_read(D41, "disk", 8192, 0.225)
    assert r.exposed_s == pytest.approx(0.262144 - 0.225 * 14 / 40 + 100e-6, rel=1e-9)


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="tier must be one of gpu, host, disk"):
        host_tables.table_read(D41, "ssd", 1, 0.01)
    with pytest.raises(ValueError, match="table_tier must be gpu, host or disk"):
        perf.StepConfig("decode", 1, 1, table_tier="ram")
    bad = {"name": "x", "rows": 1, "row_width": 1, "row_bytes": 1, "rows_per_token": 1, "layer_ids": [99]}
    with pytest.raises(ValueError, match=r"host_tables\[0\].layer_ids \[99\] outside 0..39"):
        ModelSpec.model_validate({**V41.model_dump(), "host_tables": [bad]})


def test_an_attention_tp_rank_fetches_its_share_of_its_groups_rows():
    # TP 2 with 64 tokens per GPU (the step-time model's count: a group of 2 GPUs holds 128 tokens): each rank owns
    # half the rows, so it fetches 128 x 24 / 2 = 1,536 rows per table, as many as a TP-1 GPU with 64 tokens:
    # 2 x 1,536 x 264 B / (64 GB/s x 0.5) + 5 us; only the HBM copy of the tables is split
    tp2 = Deployment(V41, B200, ParallelLayout(attention_tp=2, ep=2))
    one, two = (host_tables.table_read(d, "host", 64, 0.020) for d in (D41, tp2))
    assert two.read_s == one.read_s == pytest.approx(2 * 1536 * 264 / 32e9 + 5e-6, rel=1e-9)
    assert host_tables.table_read(tp2, "gpu", 64, 0.020).gpu_bytes_per_gpu == TOTAL / 2


def test_the_catalog_page_rows_show_the_host_link():
    from core.report import catalog_rows as summary

    row = summary.gpu_row(GB200)
    assert (row["host_link"], row["host_link_gbps"]) == ("NVLink-C2C", 450.0)  # NVLink-C2C 900 GB/s bidirectional
    assert summary.gpu_row(H200)["host_link"] == "PCIe Gen5 x16"
