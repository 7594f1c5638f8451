"""The accelerator catalog for late 2026 (issue #22): device memory as the runtime reports it, one test per
family against the published figure (source in a comment), and the new accelerators.

Units: MiB = 2**20 bytes, GiB = 2**30 bytes. An OOM message's "total capacity of X GiB" is rounded to 0.01 GiB
(10.24 MiB), so those checks allow 0.006 GiB; deviceQuery / torch dumps are checked to the byte or the MiB.
"""

import pytest

from core.catalog import load_catalog
from core.hardware import ClusterSpec, GPUSpec, precision_support

cat = load_catalog()
MIB, GIB = 2**20, 2**30
OOM_ROUNDING_GIB = 0.006  # "%.2f GiB" rounds to 0.005 GiB; a little slack


def _runtime(gpu_id: str) -> int:
    g = cat.gpu(gpu_id)
    # every budget starts from memory_bytes: it must be the runtime figure, not the marketed size
    assert g.memory_bytes == g.runtime_memory_bytes, gpu_id
    assert g.memory_gb == pytest.approx(g.runtime_memory_bytes / 1e9), gpu_id
    return g.runtime_memory_bytes


def test_every_gpu_has_a_sourced_runtime_figure_below_its_marketed_size():
    for g in cat.gpus.values():
        assert isinstance(g.runtime_memory_bytes, int), g.id
        assert g.sources.get("runtime_memory"), g.id
        # never above the marketed size read as GiB (the 1.02 slack is for the validator only)
        assert g.runtime_memory_bytes <= g.hbm_capacity_gb * GIB, g.id


def test_hopper():
    # thamada/nvidia-smi gls/H100SXMx8_deviceQuery.py: "81106 MBytes (85045477376 bytes)" (driver 565 / CUDA 12.7);
    # PyTorch OOM messages on H100 80GB HBM3 read "total capacity of 79.19 GiB" (numbers audit W3)
    h100 = _runtime("h100-sxm")
    assert h100 == 85_045_477_376
    assert h100 / GIB == pytest.approx(79.19, abs=0.02)
    # ...and below nvidia-smi's 81,559 MiB on the same box (gls/H100SXMx8_smi.py)
    assert h100 < 81_559 * MIB
    # achatbot skywork_r1v.py: _CudaDeviceProperties(name='NVIDIA H200', ..., total_memory=143156MB);
    # stas00/ml-engineering debug/pytorch.md: "total capacity of 139.80 GiB"
    h200 = _runtime("h200")
    assert h200 == 143_156 * MIB
    assert h200 / GIB == pytest.approx(139.80, abs=OOM_ROUNDING_GIB)
    assert h200 < 143_771 * MIB  # nvidia-smi (thundergolfer.com Modal table)
    # torch print "name='NVIDIA H20', major=9, minor=0, total_memory=97285MB" = 95.00 GiB
    assert _runtime("h20") == 97_285 * MIB
    # torch print "name='NVIDIA H100 PCIe', ..., total_memory=81008MB"
    assert _runtime("h100-pcie") == 81_008 * MIB


def test_hopper_budget_shrinks_as_the_audit_says():
    # audit W3: at gpu_memory_utilization 0.9 the old 80 GiB overstated the H100 budget by
    # 0.9 x (85.899 - 85.03) ~= 0.78 GB; with the deviceQuery figure: 0.9 x (85,899,345,920 - 85,045,477,376) B
    h100 = cat.gpu("h100-sxm")
    old = 80 * GIB
    assert 0.9 * (old - h100.memory_bytes) / 1e9 == pytest.approx(0.768, abs=0.001)
    # a cluster's memory is the runtime figure times the GPUs: 8 x 85.045 GB = 680.36 GB
    assert ClusterSpec(gpu=h100, num_nodes=1, gpus_per_node=8).memory_gb == pytest.approx(680.36, abs=0.01)


def test_blackwell():
    # achatbot skywork_r1v.py: total_memory=182642MB; pytorch/ao#4002 "Total Global Memory: 178.35 GB" (GiB)
    b200 = _runtime("b200")
    assert b200 == 182_642 * MIB
    assert b200 / GIB == pytest.approx(178.35, abs=0.02)
    # OOM messages: GB200 "184.31 GiB", B300 "267.69 GiB", GB300 (DGX Station, ml-engineering) "276.50 GiB"
    for gid, gib, smi_mib in (
        ("gb200", 184.31, 189_471),  # nvidia-smi MiB: aiconfigurator gb200.yaml
        ("b300", 267.69, 275_040),  # aiconfigurator b300_sxm.yaml
        ("gb300", 276.50, 284_208),  # aiconfigurator gb300.yaml
    ):
        rt = _runtime(gid)
        assert rt / GIB == pytest.approx(gib, abs=OOM_ROUNDING_GIB), gid
        # CUDA keeps 0.3-0.4 % below nvidia-smi on every Blackwell part read
        assert 0.995 < rt / (smi_mib * MIB) < 0.998, gid
    # Vera Rubin: aisimulate profile-evidence.json mem_capacity on pre-production devices
    assert _runtime("vr200") == 299_083_431_936


def test_ampere():
    # thamada/nvidia-smi gls/A100SXMx4_deviceQuery.py: "81158 MBytes (85100068864 bytes)"; nvidia-smi 81920MiB
    a100 = _runtime("a100-80gb")
    assert a100 == 85_100_068_864 and a100 < 81_920 * MIB
    # gls/A40x10_deviceQuery.py: "45403 MBytes (47608692736 bytes)"; nvidia-smi 46068MiB
    a40 = _runtime("a40")
    assert a40 == 47_608_692_736 and a40 < 46_068 * MIB


def test_ada():
    # gls/L40S_deviceQuery.py: "45589 MBytes (47803596800 bytes)" = 44.52 GiB; nvidia-smi 46068MiB
    l40s = _runtime("l40s")
    assert l40s == 47_803_596_800
    assert l40s / GIB == pytest.approx(44.52, abs=OOM_ROUNDING_GIB)
    # gls/RTX4090_deviceQuery.py: "24210 MBytes (25386352640 bytes)"; 3DTopia/Phidias-Diffusion#8: "23.64 GiB"
    rtx4090 = _runtime("rtx-4090")
    assert rtx4090 == 25_386_352_640
    assert rtx4090 / GIB == pytest.approx(23.64, abs=OOM_ROUNDING_GIB)


def test_consumer_and_single_box():
    # aikitoria/open-gpu-kernel-modules#1: RTX 5090 "32117 MBytes (33677180928 bytes)"; Wan2.1#465 "31.37 GiB"
    rtx5090 = _runtime("rtx-5090")
    assert rtx5090 == 33_677_180_928
    assert rtx5090 / GIB == pytest.approx(31.37, abs=0.02)
    # DGX Spark (GB10) OOM message "total capacity of 119.70 GiB": one pool with the CPU, 128 GB LPDDR5X
    gb10 = cat.gpu("gb10")
    assert _runtime("gb10") / GIB == pytest.approx(119.70, abs=OOM_ROUNDING_GIB)
    assert (gb10.hbm_capacity_gb, gb10.hbm_bandwidth_gbps) == (128, 273)
    assert gb10.scale_up_domain_gpus == 1 and gb10.gpus_per_node == 1


def test_amd_cdna3_cdna4():
    # thamada/nvidia-smi gls/MI300X_deviceQuery.py "196592: Total Global Memory (MB)" = 192 GiB - 16 MiB;
    # HIP OOM messages: MI300X "191.98 GiB", MI325X "255.98 GiB", MI355X "287.98 GiB"
    for gid, gib, marketed in (("mi300x", 191.98, 192), ("mi325x", 255.98, 256), ("mi355x", 287.98, 288)):
        rt = _runtime(gid)
        assert rt / GIB == pytest.approx(gib, abs=OOM_ROUNDING_GIB), gid
        assert rt == marketed * GIB - 16 * MIB, gid
    # MI455X: no reading; derived with the same 16 MiB: 432 x 1024 - 16 = 442,352 MiB
    assert _runtime("mi455x") == 442_352 * MIB


def test_tpu_and_trainium():
    # Google TPU7x doc: "HBM capacity per chip (GiB) 192", 7380 GB/s, 2307 BF16 / 4614 FP8 TFLOPS
    tpu = cat.gpu("tpu-v7")
    assert _runtime("tpu-v7") == 192 * GIB
    assert (tpu.vendor, tpu.accelerator) == ("google", "tpu") and "vLLM TPU" in tpu.serving_stack
    assert (tpu.hbm_bandwidth_gbps, tpu.tflops("bf16"), tpu.tflops("fp8")) == (7380, 2307, 4614)
    assert not tpu.supports("fp4")
    # Neuron docs, trainium3.rst: "144 GiB of device memory, with 4.9 TB/sec"; 2,517 MXFP8/MXFP4, 671 BF16
    trn = cat.gpu("trainium3")
    assert _runtime("trainium3") == 144 * GIB
    assert (trn.vendor, trn.accelerator) == ("amazon", "trainium") and "Neuron" in trn.serving_stack
    assert (trn.hbm_bandwidth_gbps, trn.tflops("bf16"), trn.tflops("fp8"), trn.tflops("fp4")) == (4900, 671, 2517, 2517)
    # MXFP4 runs natively on Trainium3; NVIDIA's NVFP4 does not
    assert precision_support(trn, "mxfp4").native and not precision_support(trn, "nvfp4").native


def test_new_accelerators_have_sources_confidence_and_links():
    for gid in ("vr200", "gb10", "h20", "a40", "mi455x", "tpu-v7", "trainium3"):
        g = cat.gpu(gid)
        assert g.confidence in ("primary", "secondary", "unverified") and g.notes, gid
        assert {"hbm", "runtime_memory", "flops", "interconnect"} <= set(g.sources), gid
        assert g.scale_up_link in cat.interconnects and g.scale_out_link in cat.interconnects, gid
    # VR NVL72: 72 GPUs in one NVLink 6 domain (the old "NVL144" counted dies), 3.6 TB/s bidirectional per GPU
    vr = cat.gpu("vr200")
    assert (vr.scale_up_domain_gpus, vr.scale_up_link, vr.scale_up_bw_gbps) == (72, "nvlink6", 1800)
    # NVIDIA VR NVL72 page (via aisimulate profile-evidence.json): dense BF16 4, FP8 17.5, NVFP4 35 PFLOPS
    assert (vr.tflops("bf16"), vr.tflops("fp8"), vr.tflops("fp4")) == (4000, 17500, 35000)
    # H20: 148 dense BF16 TFLOPS over 4.0 TB/s -> ridge 148e12 / 4.0e12 = 37 FLOP/byte; NVLink 900 bidir = 450
    h20 = cat.gpu("h20")
    assert h20.ridge_point_flop_per_byte("bf16") == pytest.approx(37.0)
    assert (h20.hbm_capacity_gb, h20.tflops("fp8"), h20.scale_up_bw_gbps) == (96, 296, 450)
    # A40: 48 GB GDDR6, 696 GB/s, no FP8 tensor cores
    a40 = cat.gpu("a40")
    assert (a40.hbm_capacity_gb, a40.hbm_bandwidth_gbps, a40.supports("fp8")) == (48, 696, False)
    # Helios: 72 MI455X, 3.6 TB/s scale-up per GPU = 1,800 per direction
    mi455x = cat.gpu("mi455x")
    assert (mi455x.scale_up_domain_gpus, mi455x.scale_up_bw_gbps, mi455x.hbm_capacity_gb) == (72, 1800, 432)


def test_new_interconnects():
    links = cat.interconnects
    # NVLink 6: 36 links x 2 lanes x 25 GB/s = 1,800 per direction; ICI 1,200 bidirectional / 2 = 600;
    # NeuronLink-v4 2.56 TB/s / 2 = 1,280; DCN 100 Gb/s / 8 = 12.5 GB/s
    expected = {"nvlink6": 1800, "ualink-helios": 1800, "tpu-ici-v7": 600, "neuronlink-v4": 1280, "gcp-dcn-100g": 12.5}
    for link_id, gbps in expected.items():
        assert links[link_id].bw_gbps_per_direction == gbps, link_id
        assert links[link_id].source, link_id


_BASE = dict(
    id="x",
    name="X",
    hbm_capacity_gb=80,
    hbm_bandwidth_gbps=3350,
    dense_tflops={"bf16": 989},
    scale_up_bw_gbps=450,
    scale_out_bw_gbps=50,
)


@pytest.mark.parametrize(
    "runtime_bytes",
    [
        8_504_547_737,  # a dropped digit: 7.9 GiB for an 80 GB part
        80 * 10**12,  # bytes for a MB figure
        int(80 * GIB * 1.03),  # above the marketed size read as GiB, beyond 2 % slack
        int(80 * GIB * 0.8),  # 20 % short: the lower bound itself is rejected
    ],
)
def test_runtime_memory_typos_are_rejected(runtime_bytes):
    with pytest.raises(ValueError, match="runtime_memory_bytes"):
        GPUSpec(**_BASE, runtime_memory_bytes=runtime_bytes)


def test_runtime_memory_within_bounds_is_accepted_and_used():
    g = GPUSpec(**_BASE, runtime_memory_bytes=85_045_477_376)
    assert g.memory_bytes == 85_045_477_376
    # without a runtime figure the marketed size is read as GiB (80 x 2**30)
    assert GPUSpec(**_BASE).memory_bytes == 85_899_345_920
