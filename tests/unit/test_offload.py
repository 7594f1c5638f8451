"""Single-box planning: GGUF bits per weight, host bandwidth, placement, fit and speed (issue 11)."""

import itertools
import math

import pytest

from core import memory
from core.catalog import load_catalog
from core.deployment.specs import Precision
from core.hardware import HostSpec, precision_support
from core.hardware.offload_efficiency import OffloadEfficiency
from core.single_box import cases, offload, options
from core.single_box.box import Box

cat = load_catalog()
DSV3 = cat.model("deepseek-v3")
SERVER = cat.host("server-ddr5-8ch-512")
RTX4090 = cat.gpu("rtx-4090")

# DeepSeek-V3 by hand: one routed expert = 3 x 7168 x 2048 = 44,040,192 weights; 256 experts per layer,
# 58 MoE layers (layers 0-2 are dense), top-8.
EXPERT = 3 * 7168 * 2048
ROUTED_ALL = 58 * 256 * EXPERT  # 653,908,770,816
ROUTED_PER_TOKEN = 58 * 8 * EXPERT  # 20,434,649,088


@pytest.mark.parametrize(
    "dtype,bits",
    [
        ("q8_0", 8 * 34 / 32),  # fp16 scale + 32 int8 = 34 B per 32 weights = 8.5
        ("q6_k", 8 * 210 / 256),  # 128 + 64 + 16 + 2 = 210 B per 256 = 6.5625
        ("iq4_xs", 8 * 136 / 256),  # 4.25
        ("iq3_xxs", 8 * 98 / 256),  # 3.0625
        ("q2_k", 8 * 84 / 256),  # 2.625
        ("iq2_xxs", 8 * 66 / 256),  # 2.0625
        ("iq1_s", 8 * 50 / 256),  # 1.5625
        # Q4_K_M over an MoE's FFN: gate + up Q4_K (4.5), down half Q6_K half Q4_K:
        # (2 x 4.5 + 0.5 x 6.5625 + 0.5 x 4.5) / 3 = 4.84375
        ("q4_k_m", (2 * 4.5 + 0.5 * 6.5625 + 0.5 * 4.5) / 3),
        # Q3_K_M: gate + up Q3_K (3.4375), down Q4_K with the first 1/16 Q5_K: (2 x 3.4375 + 4.5625) / 3 = 3.8125
        ("q3_k_m", (2 * 3.4375 + (15 / 16 * 4.5 + 1 / 16 * 5.5)) / 3),
    ],
)
def test_gguf_bits_per_weight_from_block_layouts(dtype, bits):
    assert memory.WEIGHT_FORMATS[dtype].bits_per_weight == pytest.approx(bits, rel=1e-12)


def test_gguf_types_are_weight_only_on_any_gpu():
    s = precision_support(RTX4090, "q4_k_m")
    assert s.status == "weight_only" and s.compute_dtype == "bf16"
    with pytest.raises(ValueError, match="unknown GGUF block type"):
        memory.gguf_bits_per_weight("q4_k_s")


def test_host_bandwidth_is_bus_bytes_times_transfer_rate():
    assert SERVER.peak_bandwidth_gbps == pytest.approx(8 * 8 * 4800 / 1000)  # 307.2 GB/s
    assert cat.host("apple-m3-ultra-512").peak_bandwidth_gbps == pytest.approx(128 * 6400 / 1000)  # 819.2
    assert cat.host("amd-strix-halo-128").peak_bandwidth_gbps == pytest.approx(32 * 8000 / 1000)  # 256
    assert cat.host("nvidia-dgx-spark").peak_bandwidth_gbps == pytest.approx(273, abs=0.1)  # NVIDIA: 273 GB/s


def test_host_spec_rejects_incomplete_entries():
    with pytest.raises(ValueError, match="unified host needs gpu_share"):
        HostSpec(id="x", name="x", kind="unified", memory_gb=64, bus_width_bits=128, mts=6400)
    with pytest.raises(ValueError, match="discrete host needs cpu_tflops"):
        HostSpec(id="x", name="x", kind="discrete", memory_gb=64, bus_width_bits=128, mts=6400)


def test_deepseek_v3_at_iq4_is_about_360_gb_and_needs_host_ram():
    # routed experts at 4.25 bits: 653,908,770,816 x 4.25 / 8 = 347,389,034,496 B; the rest adds ~12 GB
    total = offload.text_weights_bytes(DSV3, "iq4_xs")
    assert 355e9 < total < 375e9
    box = Box(DSV3, SERVER, RTX4090, 1, "iq4_xs", 4096)
    on_gpu = offload.placement(box, 0)
    assert not on_gpu.fits_gpu and "GPU short by" in on_gpu.status
    all_host = offload.placement(box, 61)
    assert all_host.offloaded_layers == 58
    assert all_host.host_weights_bytes == pytest.approx(347_389_034_496)
    assert all_host.fits  # 347 GB + 8 GB OS in 512 GB; ~12 GB of non-expert weights on the 24 GB card


def test_decode_with_all_experts_on_host_is_bound_by_host_bandwidth():
    # per token: 20,434,649,088 routed weights x 4.25 / 8 = 10,855,907,328 B read from DDR5;
    # at 307.2 GB/s peak that is 35.34 ms, i.e. at most 28.3 tokens/s from the host part alone
    _, host_bytes = offload.bytes_per_token(DSV3, "iq4_xs", 58)
    assert host_bytes == pytest.approx(10_855_907_328)
    assert host_bytes / (SERVER.peak_bandwidth_gbps * 1e9) == pytest.approx(0.035338, rel=1e-4)
    eff = OffloadEfficiency()
    box = Box(DSV3, SERVER, RTX4090, 1, "iq4_xs", 4096, eff)
    pl = offload.placement(box, 61)
    assert pl.decode_host_s == pytest.approx(10_855_907_328 / (307.2e9 * eff.host_bandwidth))
    assert pl.decode_tokens_per_s < 1 / 0.035338  # the GPU part only adds time
    # twice the channels, twice the host-side speed
    fast = HostSpec(**{**SERVER.model_dump(), "id": "x", "bus_width_bits": 1024})
    pl2 = offload.placement(box.with_(host=fast), 61)
    assert pl2.decode_host_s == pytest.approx(pl.decode_host_s / 2)


def test_n_cpu_moe_counts_the_leading_dense_layers():
    assert offload.offloaded_moe_layers(DSV3, 3) == 0  # layers 0-2 are dense
    assert offload.offloaded_moe_layers(DSV3, 4) == 1
    assert offload.offloaded_moe_layers(DSV3, 61) == 58
    with pytest.raises(ValueError):
        offload.offloaded_moe_layers(DSV3, -1)


def test_best_n_cpu_moe_is_the_smallest_that_fits():
    mixtral = cat.model("mixtral-8x7b")  # no dense layers: the flag counts MoE layers directly
    desk = cat.host("desktop-ddr5-2ch-96")
    box = Box(mixtral, desk, RTX4090, 1, "q4_k_m", 8192)
    n = offload.best_n_cpu_moe(box)
    assert 0 < n < 32
    assert offload.placement(box, n).fits_gpu
    assert not offload.placement(box, n - 1).fits_gpu
    assert offload.placement(box).n_cpu_moe == n  # None: the best
    # a longer context needs more KV on the GPU, so at least as many layers on the host
    assert offload.best_n_cpu_moe(box.with_(context_len=32768)) >= n
    # a second card holds more experts
    assert offload.best_n_cpu_moe(box.with_(n_gpus=2)) < n


def test_gpu_side_too_big_returns_none():
    # Kimi K2 non-expert weights in bf16 (~25 GB) plus a 128K MLA cache do not fit one 24 GB card
    kimi = cat.model("kimi-k2")
    assert offload.best_n_cpu_moe(Box(kimi, SERVER, RTX4090, 1, "bf16", 131072)) is None


def test_unified_pool_reads_every_active_weight_from_one_pool():
    m3 = cat.host("apple-m3-ultra-512")
    eff = OffloadEfficiency()
    box = Box(DSV3, m3, None, 1, "iq4_xs", 4096, eff)
    pl = offload.placement(box)
    gpu_bytes, host_bytes = offload.bytes_per_token(DSV3, "iq4_xs", 0)
    assert host_bytes == 0
    kv = memory.kv_bytes_per_sequence(DSV3, 4096, "bf16")
    assert pl.decode_s_per_token == pytest.approx((gpu_bytes + kv) / (819.2e9 * eff.unified_bandwidth))
    assert pl.gpu_capacity_bytes == pytest.approx(0.75 * 512e9)
    assert pl.fits  # ~360 GB in the 384 GB GPU share
    with pytest.raises(ValueError, match="unified-memory machine"):
        Box(DSV3, m3, RTX4090, 1, "iq4_xs")
    with pytest.raises(ValueError, match="no --n-cpu-moe"):
        offload.best_n_cpu_moe(box)
    with pytest.raises(ValueError, match="no --n-cpu-moe"):
        options.speed_vs_offload(box)
    assert options.upgrades(box, dict(cat.hosts)) == []


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="dense"):
        Box(cat.model("llama-3-70b"), SERVER, RTX4090)
    with pytest.raises(ValueError, match="context_len"):
        Box(DSV3, SERVER, RTX4090, context_len=0)
    with pytest.raises(ValueError, match="1-4 GPUs"):
        Box(DSV3, SERVER, RTX4090, n_gpus=5)
    with pytest.raises(ValueError, match="n_cpu_moe must be 0-61"):
        offload.placement(Box(DSV3, SERVER, RTX4090), 62)
    with pytest.raises(ValueError, match="pick a GPU"):
        Box(DSV3, SERVER)
    with pytest.raises(ValueError, match="box must be a Box"):
        offload.placement(DSV3)
    with pytest.raises(ValueError, match="host_bandwidth must be in"):
        OffloadEfficiency(host_bandwidth=0)


def test_every_moe_model_gets_a_placement_on_every_single_box_option():
    hosts = list(cat.hosts.values())
    for model in cat.models.values():
        if not model.is_moe:
            continue
        for prec in ("q4_k_m", "iq2_xxs"):
            rows = options.single_box_options(Box(model, SERVER, RTX4090, 1, prec, 8192), hosts, dict(cat.gpus))
            n_discrete = sum(h.kind == "discrete" for h in hosts)
            assert len(rows) == n_discrete * 4 + (len(hosts) - n_discrete)
            for pl in rows:
                assert math.isfinite(pl.decode_tokens_per_s) and pl.decode_tokens_per_s > 0, (model.id, pl.host_id)
                assert math.isfinite(pl.prefill_tokens_per_s) and pl.prefill_tokens_per_s > 0
                assert pl.status == "fits" or pl.status.startswith("does not fit: ")


def test_small_moe_fits_on_one_gpu_without_offload():
    # Qwen3-30B-A3B at Q4_K_M is ~18 GB: the 32 GB RTX 5090 holds it all
    pl = offload.placement(Box(cat.model("qwen3-30b-a3b"), cat.host("desktop-ddr5-2ch-96"), cat.gpu("rtx-5090")))
    assert pl.n_cpu_moe == 0 and pl.offloaded_layers == 0 and pl.fits and pl.prefill_path == "all on GPU"


def test_upgrades_more_channels_speed_up_decode():
    ups = {u["change"]: u for u in options.upgrades(Box(DSV3, SERVER, RTX4090, 1, "q4_k_m", 4096), dict(cat.hosts))}
    twelve = ups["host: " + cat.host("server-ddr5-12ch-768").name]
    assert 1.2 < twelve["decode_speedup"] < 1.5  # 460.8 / 307.2 = 1.5 on the host part, less overall
    one_more = ups["one more " + RTX4090.name]
    assert 1.0 < one_more["decode_speedup"] < 1.1  # a few layers move to the GPU


def test_published_single_box_measurements():
    # ktransformers' DeepSeek-V3 Q4_K_M showcase (catalogs/offload_cases.yaml): 8.73 tok/s decode on one
    # 8-channel DDR5-4800 socket (calibration); dual-socket cases are predictions and over-shoot (NUMA)
    rows = {
        r["case"]: r for r in cases.validate_cases(cat.offload_cases, dict(cat.models), dict(cat.hosts), dict(cat.gpus))
    }
    cal = rows["ktransformers-v0.2-1socket-dsv3-q4km"]
    assert cal["decode_tokens_per_s"][1] == 8.73
    assert abs(cal["decode_tokens_per_s"][2]) < 0.05
    assert abs(cal["prefill_tokens_per_s"][2]) < 0.25
    for cid in ("ktransformers-v0.2-2socket-dsv3-q4km", "ktransformers-v0.2.1-2socket-dsv3-q4km-1k"):
        err = rows[cid]["decode_tokens_per_s"][2]
        assert 0 < err < 0.35, (cid, err)


def test_speed_vs_offload_is_monotone():
    sweep = options.speed_vs_offload(Box(DSV3, SERVER, RTX4090, 1, Precision(weights="q4_k_m"), 4096))
    assert [p.offloaded_layers for p in sweep] == list(range(59))
    speeds = [p.decode_tokens_per_s for p in sweep]
    assert all(a > b for a, b in itertools.pairwise(speeds))  # every layer moved to DDR5 costs time


def test_decode_reads_the_cache_a_step_reads_not_the_stored_cache():
    # design review 3, P1. GLM-5.2 (78 MLA layers, all with DSA top-2,048 sparse attention; 21 carry their own
    # indexer, 57 share one) at 131,072 tokens with a bf16 cache. Stored: 78 x 131,072 x (512 + 64) x 2 B
    # = 11.78 GB of latents + 21 x 131,072 x 132 B of index keys (128 fp8 + a 4-byte scale) = 0.36 GB: 12.14 GB.
    # A decode step reads the top-2,048 latents of every layer and scans the index keys of the 21 indexers:
    # 78 x 2,048 x 1,152 = 184,025,088 B + 21 x 131,072 x 132 = 363,331,584 B = 547,356,672 B (0.55 GB).
    glm = cat.model("glm-5.2")
    m3 = cat.host("apple-m3-ultra-512")
    eff = OffloadEfficiency()
    pl = offload.placement(Box(glm, m3, None, 1, "q4_k_m", 131_072, eff))
    weights_read, _ = offload.bytes_per_token(glm, "q4_k_m", 0)
    kv_read = pl.decode_s_per_token * 819.2e9 * eff.unified_bandwidth - weights_read
    assert kv_read == pytest.approx(547_356_672, rel=1e-6)
    # the memory it must hold is still the stored cache
    assert pl.gpu_kv_bytes == pytest.approx(78 * 131_072 * 1_152 + 21 * 131_072 * 132, rel=1e-6)


def test_an_upgrade_is_measured_against_the_placement_asked_for():
    # here all experts on the host: one more card then moves many layers' experts off the host, more than it does
    # from the best placement (which already fills the first card)
    box = Box(DSV3, SERVER, RTX4090, 2, "iq4_xs", 4096)
    worst = {u["change"]: u for u in options.upgrades(box, dict(cat.hosts), n_cpu_moe=61)}
    best = {u["change"]: u for u in options.upgrades(box, dict(cat.hosts))}
    key = "one more " + RTX4090.name
    assert worst[key]["decode_speedup"] > best[key]["decode_speedup"] > 1
    assert not Box(DSV3, cat.host("apple-m3-ultra-512"), None, 1, "iq4_xs").discrete
