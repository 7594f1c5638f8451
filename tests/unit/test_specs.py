import pytest
from pydantic import ValidationError

from core._util.validated import describe_validation_error
from core.deployment.specs import ParallelLayout, Precision, Scenario, Workload
from core.hardware import ClusterSpec, GPUSpec
from core.model import MoESpec

H100 = dict(
    id="h100-test",
    name="H100 test",
    hbm_capacity_gb=80,
    hbm_bandwidth_gbps=3350,
    dense_tflops={"bf16": 989, "fp8": 1978},
    scale_up_bw_gbps=450,
    scale_out_bw_gbps=50,
)


def test_gpu_ridge_point_is_flops_over_bandwidth():
    g = GPUSpec(**H100)
    # 989e12 FLOP/s / 3.35e12 B/s = 295.2 FLOP/byte (the sources' "about 295")
    assert g.ridge_point_flop_per_byte("bf16") == pytest.approx(295.22, abs=0.01)
    assert g.ridge_point_flop_per_byte("fp8") == pytest.approx(590.45, abs=0.01)


def test_gpu_unsupported_dtype_message_names_native_ones():
    g = GPUSpec(**H100)
    with pytest.raises(ValueError, match=r"no native fp4 .*native: bf16, fp8"):
        g.tflops("fp4")
    with pytest.raises(ValueError, match="unknown compute dtype 'fp3'"):
        g.tflops("fp3")


@pytest.mark.parametrize(
    "field,value,fragment",
    [
        ("hbm_capacity_gb", 0, "greater than 0"),
        ("hbm_bandwidth_gbps", -5, "greater than 0"),
        ("id", "H100 SXM", "pattern"),
        ("scale_up_domain_gpus", 0, "greater than or equal to 1"),
    ],
)
def test_gpu_bounds_name_the_field(field, value, fragment):
    with pytest.raises(ValidationError) as e:
        GPUSpec(**{**H100, field: value})
    msg = describe_validation_error(e.value)
    assert msg.startswith(field) and fragment in msg


def test_gpu_needs_a_16bit_rate_and_rejects_unknown_fields():
    with pytest.raises(ValidationError, match="bf16 or fp16"):
        GPUSpec(**{**H100, "dense_tflops": {"fp8": 1978}})
    with pytest.raises(ValidationError, match="extra_field"):
        GPUSpec(**{**H100, "extra_field": 1})


def test_specs_are_frozen():
    g = GPUSpec(**H100)
    with pytest.raises(ValidationError):
        g.hbm_capacity_gb = 1


def test_moe_top_k_cannot_exceed_experts():
    with pytest.raises(ValidationError, match=r"top_k \(9\) cannot exceed n_routed_experts \(8\)"):
        MoESpec(n_routed_experts=8, top_k=9, expert_intermediate_size=1)


def test_cluster_scale_up_domain():
    g = GPUSpec(**H100)
    c = ClusterSpec(gpu=g, num_nodes=4, gpus_per_node=8)
    assert c.total_gpus == 32 and c.scale_up_domain_gpus == 8 and c.hbm_total_gb == 2560
    nvl72 = GPUSpec(**{**H100, "id": "gb", "scale_up_domain_gpus": 72, "gpus_per_node": 4})
    assert ClusterSpec(gpu=nvl72, num_nodes=18, gpus_per_node=4).scale_up_domain_gpus == 72
    assert ClusterSpec(gpu=nvl72, num_nodes=2, gpus_per_node=4).scale_up_domain_gpus == 8


def test_precision_of_a_name_and_label():
    p = Precision.of("fp8")
    assert p.weights == "fp8" and p.expert_dtype == "fp8"
    mixed = Precision(weights="bf16", routed_experts="int4")
    assert mixed.expert_dtype == "int4" and mixed.label == "bf16 + int4 experts, KV bf16"
    with pytest.raises(ValueError, match="unknown precision 'fp6'"):
        Precision.of("fp6")
    with pytest.raises(ValidationError):
        Precision(kv_cache="int4")


def test_workload_bounds_and_context():
    assert Workload(batch=2, input_len=1000, output_len=24).context_len == 1024
    with pytest.raises(ValidationError, match="batch"):
        Workload(batch=0)


def test_parallel_layout_must_split_the_same_gpus():
    assert ParallelLayout(attention_dp=8, ep=8).total_gpus == 8
    with pytest.raises(ValidationError, match=r"attention_tp x attention_dp \(8\) must equal ep x expert_tp \(4\)"):
        ParallelLayout(attention_tp=8, ep=4)


def test_scenario_default_is_deepseek_v3_on_8_h200_fp8():
    s = Scenario()
    assert (s.model_id, s.gpu_id, s.total_gpus, s.precision.weights) == ("deepseek-v3", "h200", 8, "fp8")


def test_int8_runs_natively_on_mi355x_and_rtx_5090():
    # audit M14: both have INT8 tensor cores, but with no int8 peak in the catalog the Fit page's minimum-GPU
    # table marked int8 "emulated". CDNA4 runs INT8 at its FP8 rate (5,033.2 dense TOPS); the RTX 5090 quotes
    # 1,676 sparse INT8 TOPS, 838 dense (integer math has no FP32-accumulate halving: 2 x its 419 FP8)
    from core.catalog import load_catalog
    from core.hardware import precision_support

    cat = load_catalog()
    mi355x, rtx5090 = cat.gpu("mi355x"), cat.gpu("rtx-5090")
    assert precision_support(mi355x, "int8").status == "native" and mi355x.tflops("int8") == mi355x.tflops("fp8")
    assert precision_support(rtx5090, "int8").status == "native" and rtx5090.tflops("int8") == 1676 / 2
