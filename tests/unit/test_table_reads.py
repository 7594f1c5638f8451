"""Where DeepSeek-V4.1-Flash's Engram tables live and what reading them costs a step (core.host_tables), by hand.

The tables (catalogs/models/deepseek-v4.1-flash, tests/unit/test_host_tables.py): Engram at layer 1, 384,006,168
rows, and at layer 14, 384,016,682 rows, 264 B each (256 E4M3 + 8 E8M0 scales), 24 rows per token each."""

import pytest

from core import host_tables, perf
from core.catalog import load_catalog
from core.model import ModelSpec
from core.specs import ParallelLayout

cat = load_catalog()
V41 = cat.model("deepseek-v4.1-flash")
B200, GB200, H200 = cat.gpu("b200"), cat.gpu("gb200"), cat.gpu("h200")
TOTAL = (384_006_168 + 384_016_682) * 264  # 202,758,032,400 B


def test_host_links():
    # B200: PCIe Gen6 x16, 128 GB/s per direction; H200: Gen5, 64; GB200: NVLink-C2C 900 GB/s bidirectional = 450
    assert host_tables.host_link(B200) == ("PCIe Gen6 x16", 128.0)
    assert host_tables.host_link(H200) == ("PCIe Gen5 x16", 64.0)
    assert host_tables.host_link(GB200) == ("NVLink-C2C", 450.0)


def test_where_each_tier_keeps_the_tables():
    gpu, host, disk = host_tables.tier_costs(V41, B200, 64, 0.02, attention_tp=2)
    assert TOTAL == 202_758_032_400 and gpu.table_bytes == TOTAL
    assert gpu.gpu_bytes_per_gpu == TOTAL / 2 and gpu.host_bytes_per_node == 0  # sharded over attention TP 2
    assert host.host_bytes_per_node == TOTAL and host.gpu_bytes_per_gpu == 0  # one copy per node
    assert disk.disk_bytes_per_node == TOTAL
    # 2 tables x 24 rows x 264 B = 12,672 B per token ("~13 KB of engram per token")
    assert host.bytes_per_token == 12_672 and host.rows_per_token == 48


def test_host_reads_of_a_decode_step_hide_behind_the_first_layer():
    # 64 tokens x 24 rows x 264 B = 405,504 B per table over PCIe Gen6 at 128 GB/s x 0.5: 6.336 us each, 12.672 us
    # in all + 5 us latency = 17.672 us. The layer-1 table is due after 1/40 of a 20 ms step's compute (500 us):
    # hidden; only the latency is exposed
    r = host_tables.table_read(V41, B200, "host", 64, 0.020)
    assert r.read_s == pytest.approx(2 * 405_504 / 64e9 + 5e-6, rel=1e-9)
    assert r.exposed_s == pytest.approx(5e-6, rel=1e-9)


def test_disk_reads_of_a_prefill_chunk_are_exposed():
    # 8,192 tokens x 24 rows = 196,608 random reads per table; 8 drives x 1.5M reads/s shared by 8 GPUs = 1.5M/s
    # per GPU: 131.072 ms per table. Compute 280 ms: the layer-1 table is due at 7 ms (exposed 124.072 ms), the
    # layer-14 table (fetched after it, at 262.144 ms) at 98 ms (exposed 164.144 ms); + 100 us latency
    r = host_tables.table_read(V41, B200, "disk", 8192, 0.280)
    assert r.read_s == pytest.approx(2 * 196_608 / 1.5e6 + 100e-6, rel=1e-9)
    assert r.exposed_s == pytest.approx(2 * 196_608 / 1.5e6 - 0.280 * 14 / 40 + 100e-6, rel=1e-9)


def test_the_step_time_adds_what_the_reads_expose():
    lay = ParallelLayout(attention_tp=1, attention_dp=8, ep=8)
    eff = cat.efficiency_for("b200", "sglang")
    steps = {
        tier: perf.step_time(V41, B200, lay, "fp8", perf.StepConfig("prefill", 8192, 4096, table_tier=tier), eff)
        for tier in host_tables.TIERS
    }
    for tier, st in steps.items():
        # a 4,096-token prompt: the decoder layers replay its last 128 tokens, 1/32 of the step's tokens
        r = host_tables.table_read(V41, B200, tier, 8192, st.compute_s, replayed=128 / 4096)
        assert st.components["host_tables"] == pytest.approx(r.exposed_s, rel=1e-12)
    # the tables change nothing but their own term
    base = steps["gpu"].step_s - steps["gpu"].components["host_tables"]
    assert steps["disk"].step_s - steps["disk"].components["host_tables"] == pytest.approx(base, rel=1e-12)
    assert steps["disk"].components["host_tables"] > 0.1  # > 100 ms: NVMe random reads of an 8K chunk
    # a model without tables has no such term
    v4 = cat.model("deepseek-v4-flash")
    assert (
        "host_tables" not in perf.step_time(v4, B200, lay, "fp8", perf.StepConfig("decode", 64, 4096), eff).components
    )


def test_a_causal_encoders_prefill_puts_the_tables_due_later():
    # prefill, 128 of 1,024 prompt tokens replayed (1/8): the 20 encoder layers weigh 1 each, the 20 decoder layers
    # 1/8 each, 22.5 layers of compute in all; the layer-1 table is due after 1/22.5 of it, the layer-14 table after
    # 14/22.5. Disk tier, 8,192 tokens: 131.072 ms per table (as above); compute 225 ms: due at 10 and 140 ms;
    # exposed max(131.072 - 10, 262.144 - 140) = 122.144 ms + 100 us latency
    r = host_tables.table_read(V41, B200, "disk", 8192, 0.225, replayed=1 / 8)
    assert r.exposed_s == pytest.approx(0.262144 - 0.140 + 100e-6, rel=1e-9)
    # every layer at full tokens (decode, or no causal encoder): due at 1/40 and 14/40 of the compute
    r = host_tables.table_read(V41, B200, "disk", 8192, 0.225)
    assert r.exposed_s == pytest.approx(0.262144 - 0.225 * 14 / 40 + 100e-6, rel=1e-9)


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="tier must be one of gpu, host, disk"):
        host_tables.table_read(V41, B200, "ssd", 1, 0.01)
    with pytest.raises(ValueError, match="attention_tp"):
        host_tables.table_read(V41, B200, "host", 1, 0.01, attention_tp=0)
    with pytest.raises(ValueError, match="table_tier must be gpu, host or disk"):
        perf.StepConfig("decode", 1, 1, table_tier="ram")
    bad = {"name": "x", "rows": 1, "row_width": 1, "row_bytes": 1, "rows_per_token": 1, "layer_ids": [99]}
    with pytest.raises(ValueError, match=r"host_tables\[0\].layer_ids \[99\] outside 0..39"):
        ModelSpec.model_validate({**V41.model_dump(), "host_tables": [bad]})


def test_an_attention_tp_rank_fetches_its_share_of_its_groups_rows():
    # TP 2 with 64 tokens per GPU (the step-time model's count: a group of 2 GPUs holds 128 tokens): each rank owns
    # half the rows, so it fetches 128 x 24 / 2 = 1,536 rows per table, as many as a TP-1 GPU with 64 tokens:
    # 2 x 1,536 x 264 B / (128 GB/s x 0.5) + 5 us; only the HBM copy of the tables is split
    tp1 = host_tables.table_read(V41, B200, "host", 64, 0.020, attention_tp=1)
    tp2 = host_tables.table_read(V41, B200, "host", 64, 0.020, attention_tp=2)
    assert tp2.read_s == tp1.read_s == pytest.approx(2 * 1536 * 264 / 64e9 + 5e-6, rel=1e-9)
    assert host_tables.table_read(V41, B200, "gpu", 64, 0.020, attention_tp=2).gpu_bytes_per_gpu == TOTAL / 2
