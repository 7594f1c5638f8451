"""Decode context parallelism (issue 23): vLLM's ``--decode-context-parallel-size`` shards each sequence's cache
along the sequence over ranks of the attention-TP group instead of replicating it (vLLM blog, 2026-08-07). Hand
values below: the bytes a GPU holds and reads, the rules vLLM enforces, and where the layout search offers it."""

import pytest

from core import memory, perf
from core.catalog import load_catalog
from core.deployment import parallel
from core.deployment.bundle import Deployment
from core.deployment.parallel import check_layout
from core.deployment.specs import ParallelLayout, Precision, Workload
from core.hardware import ClusterSpec, collectives
from core.perf.kernels import layer_comm, layer_costs
from core.serving import layout
from tests.unit._search import search

cat = load_catalog()
KIMI = cat.model("kimi-k2.6")  # 61 MLA layers: latent 512 + RoPE 64 = 576 cached elements per token, 64 heads
QWEN = cat.model("qwen3-235b-a22b")  # GQA with 4 KV heads
HYBRID = cat.model("qwen3.5-397b-a17b")  # Gated DeltaNet layers beside full attention
B200 = cat.gpu("b200")
NVFP4 = Precision(weights="nvfp4", kv_cache="fp8")
EFF = cat.efficiency_for("b200", "vllm")


def tp8(dcp: int = 1) -> ParallelLayout:
    return ParallelLayout(attention_tp=8, ep=8, dcp=dcp)


def test_a_gpu_holds_one_dcp_th_of_each_sequence():
    # 61 layers x 576 fp8 bytes x 68,000 tokens = 2,389,248,000 B on every TP rank (MLA's latent is replicated);
    # DCP 8: 298,656,000 B
    whole = range(61)
    assert memory.kv_bytes_per_sequence_on_gpu(KIMI, 68_000, "fp8", 8, whole) == pytest.approx(2_389_248_000)
    assert memory.kv_bytes_per_sequence_on_gpu(KIMI, 68_000, "fp8", 8, whole, 8) == pytest.approx(298_656_000)


def test_dcp_multiplies_the_sequences_the_cache_holds():
    # the weights are the same, so the budget is; each sequence takes an eighth: 8x as many (floors aside)
    one = memory.max_concurrent_sequences(Deployment(KIMI, B200, tp8(), NVFP4), 68_000)
    eight = memory.max_concurrent_sequences(Deployment(KIMI, B200, tp8(8), NVFP4), 68_000)
    assert one >= 30  # ~94 GB of budget / 2.39 GB
    assert 8 * one <= eight < 8 * (one + 1)


def test_vllm_rules():
    # MLA: any divisor of TP; GQA with 4 KV heads at TP 8 makes 2 copies of each: DCP 2 only
    assert parallel.dcp_problems(KIMI, 8, 8) == []
    assert parallel.dcp_problems(QWEN, 8, 2) == []
    assert "attention TP 8 makes 2" in parallel.dcp_problems(QWEN, 8, 4)[0]
    assert "attention TP 4 makes 1" in parallel.dcp_problems(QWEN, 4, 2)[0]
    assert "Gated DeltaNet" in parallel.dcp_problems(HYBRID, 8, 2)[0]
    with pytest.raises(ValueError, match="decode context parallel size 8 must divide attention TP 4"):
        ParallelLayout(attention_tp=4, attention_dp=2, ep=8, dcp=8)
    assert check_layout(QWEN, ParallelLayout(attention_tp=8, ep=8, dcp=4))


def test_decode_reads_a_shard_with_every_head_of_the_group():
    # 8 sequences in the TP group at 68,000 tokens: one layer reads 8 x 576 x 68,000 = 313,344,000 fp8 bytes per rank,
    # 39,168,000 with DCP 8; the score FLOPs are the same (8 heads over all tokens = 64 heads over an eighth) and
    # the query rows per latent stream go from 64 / 8 = 8 to 64
    cfg = perf.StepConfig("decode", 1.0, 68_000)
    (plain,), (dcp,) = (layer_costs(Deployment(KIMI, B200, tp8(d), NVFP4, EFF), cfg).mixer for d in (1, 8))
    assert plain["attention_scores"].cache_bytes == pytest.approx(313_344_000)
    assert dcp["attention_scores"].cache_bytes == pytest.approx(39_168_000)
    assert dcp["attention_scores"].flops == pytest.approx(plain["attention_scores"].flops)
    assert (plain["attention_scores"].rows, dcp["attention_scores"].rows) == (8, 64)


def test_the_merge_is_three_collectives_per_layer():
    # 8 query tokens; the DCP group runs 64 x 8 / 8 = 64 heads: all-gather the latent-space queries
    # 8 x 64 x 576 x 2 = 589,824 B and the fp32 log-sum-exps 8 x 64 x 4 = 2,048 B, then reduce-scatter the rescaled
    # latent-space outputs 8 x 64 x 512 x 2 = 524,288 B (vLLM's cp_lse_ag_out_rs)
    def c(op, nbytes):
        return collectives.collective_s(
            op,
            nbytes,
            8,
            table=EFF.collectives,
            stack="vllm",
            graph=True,
            scale_up_gbps=B200.scale_up_bw_gbps,
            scale_out_gbps=B200.scale_out_bw_gbps,
            domain_gpus=8,
            link=EFF["allreduce"],
        )

    want = c("all_gather", 589_824) + c("all_gather", 2_048) + c("reduce_scatter", 524_288)
    assert layer_comm.dcp_merge_s(
        Deployment(KIMI, B200, tp8(8), NVFP4, EFF, domain_gpus=8), "decode", 8.0
    ) == pytest.approx(want)
    assert layer_comm.dcp_merge_s(Deployment(KIMI, B200, tp8(), NVFP4, EFF, domain_gpus=8), "decode", 8.0) == 0.0
    st = perf.step_time(Deployment(KIMI, B200, tp8(8), NVFP4, EFF), perf.StepConfig("decode", 1.0, 68_000))
    assert st.components["dcp_merge"] == pytest.approx(61 * want)
    prefill = perf.step_time(Deployment(KIMI, B200, tp8(8), NVFP4, EFF), perf.StepConfig("prefill", 1024.0, 8192))
    assert "dcp_merge" not in prefill.components  # vLLM's DCP merges in decode; prefill is priced as TP's


def test_the_search_offers_dcp_to_vllm_decode_only():
    cluster = ClusterSpec(gpu=B200, num_nodes=1, gpus_per_node=8)
    wl = Workload(input_len=67_600, output_len=400)

    def kinds(stack, phase):
        plans = layout.recommend(search(KIMI, cluster, wl, precision=NVFP4, stack=stack), phase, catalog=cat)
        return {p.layout.dcp for p in plans}, plans

    seen, plans = kinds("vllm", "decode")
    assert seen == {1, 2, 4, 8}
    # at 68K tokens TP 8's replicated latent holds 4.9 sequences per GPU; DCP 8 holds 8x as many and serves more
    tp_only = layout.rank_of(plans, tp=8, ep=8)
    best_dcp8 = layout.rank_of(plans, tp=8, ep=8, dcp=8)
    assert best_dcp8.tokens_per_gpu > 7 * tp_only.tokens_per_gpu
    assert best_dcp8.tokens_per_s_per_gpu > 3 * tp_only.tokens_per_s_per_gpu
    assert "DCP 8 shards the cache" in best_dcp8.reason and "DCP8" in best_dcp8.label
    assert kinds("sglang", "decode")[0] == {1}
    assert kinds("vllm", "prefill")[0] == {1}
    assert "vLLM's" in layout.engine_problems("sglang", KIMI, tp8(8))[0]


def test_a_dcp_layout_reaches_the_url_and_the_launch_commands():
    # "Use the best decode layout" on a DCP plan: the URL and the vLLM command must carry it, not drop it silently
    from core.deployment.specs import Scenario
    from core.scenario import scenario_from_params, scenario_to_params
    from core.serving.launch import launch_command, spec_from_plan

    s = Scenario(model_id="kimi-k2.6", gpu_id="b200", layout=tp8(8))
    params = scenario_to_params(s)
    assert params["dcp"] == "8"
    back, warnings = scenario_from_params(params, cat)
    assert not warnings and back.layout == tp8(8)
    _, warnings = scenario_from_params({**params, "dcp": "3"}, cat)
    assert warnings == ["URL parameter dcp=3 does not divide attention TP 8; using 1"]
    assert "dcp" not in scenario_to_params(s.model_copy(update={"layout": tp8()}))
    spec = spec_from_plan("moonshotai/Kimi-K2.6", tp8(8))
    vllm = launch_command(spec, "vllm")
    assert "--tensor-parallel-size 8" in vllm.command and "--decode-context-parallel-size 8" in vllm.command
    sglang = launch_command(spec, "sglang")
    assert "decode-context" not in sglang.command
    assert any("no decode context parallelism: 1/8 of the plan's sequences fit" in n for n in sglang.notes)
