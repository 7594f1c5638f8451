"""Weights, KV cache, per-GPU memory and fit verdicts, against hand arithmetic and the sources' table."""

import numpy as np
import pytest
from pydantic import ValidationError

from core import memory
from core.catalog import load_catalog
from core.deployment.bundle import Deployment
from core.deployment.parallel import default_layout
from core.deployment.specs import MemoryAssumptions, ParallelLayout, Precision, SpecDecodeConfig, Workload
from core.hardware import precision_support
from core.model import params

cat = load_catalog()
H100, H200, A100, B200 = (cat.gpu(g) for g in ("h100-sxm", "h200", "a100-80gb", "b200"))
ONE_TOKEN = Workload(batch=1, input_len=1, output_len=1)
# the sources' arithmetic: nominal decimal 80 GB, nothing reserved, the whole GPU for the engine
BARE = MemoryAssumptions(gpu_memory_utilization=1.0, runtime_reserve_gb=0, activation_factor=0)


def test_weight_formats_state_their_scale_overhead():
    f = memory.WEIGHT_FORMATS
    assert f["bf16"].bits_per_weight == 16
    assert f["fp8"].bytes_per_param == pytest.approx(1 + 4 / 16384)  # fp32 scale per 128x128 block
    assert f["int4"].bits_per_weight == pytest.approx(4 + 8 * 2.5 / 128)  # fp16 scale + 4-bit zero / 128
    assert f["nvfp4"].bits_per_weight == pytest.approx(4.5)  # E4M3 scale per 16
    assert f["mxfp4"].bits_per_weight == pytest.approx(4.25)  # E8M0 scale per 32
    assert all(fmt.scales for fmt in f.values())


def test_deepseek_v3_fp8_is_about_685_gb_with_mtp_671_without():
    m = cat.model("deepseek-v3")
    b = params.breakdown(m)
    # hand: embedding + head (2 x 129280 x 7168 = 1.853e9) stay bf16 (2 B), norms and router bf16,
    # every other parameter at 1 + 4/16384 bytes (fp8 with block scales)
    high = b.embedding + b.lm_head + b.norms + b.router
    low = b.total - high
    expected = 2 * high + low * (1 + 4 / 16384)
    assert memory.weights_bytes(m, "fp8") == pytest.approx(expected, rel=1e-9)
    assert memory.weights_bytes(m, "fp8") / 1e9 == pytest.approx(673, abs=1.5)  # "671B" in FP8
    assert memory.weights_bytes(m, "fp8", include_mtp=True) / 1e9 == pytest.approx(685, abs=1.5)


def test_deepseek_v3_fp8_does_not_fit_8_h100_fits_8_h200():
    m = cat.model("deepseek-v3")
    lay = ParallelLayout(attention_tp=8, ep=8)
    # 685 GB with MTP / 8 = 85.6 GB per GPU > 80 GiB x 0.9 usable = 77.3 GB
    assert not memory.per_gpu_memory(Deployment(m, H100, lay, "fp8"), ONE_TOKEN).fits
    assert not memory.per_gpu_memory(
        Deployment(m, H100, lay, "fp8", spec=SpecDecodeConfig(method="mtp")), ONE_TOKEN
    ).fits
    # 141 GiB x 0.9 = 136 GB usable per H200
    r = memory.per_gpu_memory(Deployment(m, H200, lay, "fp8", spec=SpecDecodeConfig(method="mtp")), ONE_TOKEN)
    assert r.fits and r.weights_bytes / 1e9 == pytest.approx(685 / 8, rel=0.03)
    assert memory.min_gpus(m, "h100-sxm", "fp8") == 16
    assert memory.min_gpus(m, "h200", "fp8") == 8


@pytest.mark.parametrize(
    "model_id,gb,gpus",
    [
        # Mixtral 8x22B: 140.6B params in FP8 + bf16 embeddings -> ~141 GB, 2 x H100
        ("mixtral-8x22b", 141, 2),
        # Qwen3-235B-A22B: 235.1B -> ~236 GB, 4 x H100 (3 is not a count a layout uses)
        ("qwen3-235b-a22b", 236, 4),
        # Llama 4 Scout: 107.8B text + 0.87B vision (bf16) + bf16 embeddings -> ~111 GB
        ("llama-4-scout", 111, 2),
    ],
)
def test_fp8_sizes_and_h100_counts(model_id, gb, gpus):
    m = cat.model(model_id)
    assert memory.weights_bytes(m, "fp8") / 1e9 == pytest.approx(gb, abs=1.5)
    assert memory.min_gpus(m, H100, "fp8") == gpus


def test_int4_experts_with_bf16_rest_fit_deepseek_v3_on_8_h100():
    m = cat.model("deepseek-v3")
    mixed = Precision(weights="bf16", routed_experts="int4")
    b = params.breakdown(m)
    expected = b.routed_experts * (0.5 + 2.5 / 128) + (b.total - b.routed_experts) * 2
    assert memory.weights_bytes(m, mixed) == pytest.approx(expected, rel=1e-9)
    # 654B routed x 0.52 B + 17B x 2 B = ~374 GB: fits 8 x 80 GB
    assert memory.weights_bytes(m, mixed) / 1e9 == pytest.approx(374, abs=3)
    assert memory.min_gpus(m, H100, mixed) == 8


def test_llama3_70b_with_8b_draft_leaves_about_3_gb_of_kv_on_2_h100():
    target, draft = cat.model("llama-3-70b"), cat.model("llama-3-8b")
    nominal = H100.model_copy(update={"runtime_memory_bytes": 80_000_000_000})
    spec = SpecDecodeConfig(method="draft_model", draft_model_id="llama-3-8b", num_speculative_tokens=5)
    r = memory.per_gpu_memory(
        Deployment(
            target,
            nominal,
            ParallelLayout(attention_tp=2, expert_tp=2),
            "bf16",
            assumptions=BARE,
            spec=spec,
            draft=draft,
        ),
        ONE_TOKEN,
    )
    # 160 GB - 70.55B x 2 B - 8.03B x 2 B = 2.83 GB for both GPUs (the sources round to 70B and 8B: "4 GB");
    # the target's 1,318,912 norm weights (80 x 2 x 8192 + 8192) sit on both TP ranks
    hand = 160e9 - 2 * (70_553_706_496 + 1_318_912) - 2 * 8_030_261_248
    assert 2 * r.kv_budget_bytes == pytest.approx(hand, rel=1e-6)
    assert 2 * r.kv_budget_bytes / 1e9 == pytest.approx(2.83, abs=0.01)


def test_llama3_70b_fp8_with_fp8_kv_holds_batch_16_at_2048():
    target, draft = cat.model("llama-3-70b"), cat.model("llama-3-8b")
    spec = SpecDecodeConfig(method="draft_model", draft_model_id="llama-3-8b", num_speculative_tokens=5)
    wl = Workload(batch=16, input_len=1536, output_len=512)
    r = memory.per_gpu_memory(
        Deployment(
            target,
            H100,
            ParallelLayout(attention_tp=2, expert_tp=2),
            Precision(weights="fp8", kv_cache="fp8"),
            spec=spec,
            draft=draft,
        ),
        wl,
    )
    assert r.fits
    # target KV: 2 x 8 x 128 x 1 B x 80 layers = 163,840 B/token, halved over TP 2, x (2048 + 5) tokens x 16
    assert r.components["kv_cache"] == pytest.approx(16 * 163_840 / 2 * 2053)
    # draft KV (bf16 weights, same fp8 cache): 2 x 8 x 128 x 1 B x 32 layers, over TP 2
    assert r.components["draft_kv_cache"] == pytest.approx(16 * 65_536 / 2 * 2053)


def test_mla_kv_is_replicated_over_tp_gqa_is_split():
    ds, l70 = cat.model("deepseek-v3"), cat.model("llama-3-70b")
    wl = Workload(batch=8, input_len=4000, output_len=96)
    r = memory.per_gpu_memory(Deployment(ds, H200, ParallelLayout(attention_tp=8, ep=8), "fp8"), wl)
    assert r.components["kv_cache"] == pytest.approx(8 * 70_272 * 4096)  # whole latent on every rank
    r = memory.per_gpu_memory(Deployment(ds, H200, ParallelLayout(attention_dp=8, ep=8), "fp8"), wl)
    assert r.components["kv_cache"] == pytest.approx(1 * 70_272 * 4096)  # DP attention: one sequence each
    r = memory.per_gpu_memory(Deployment(l70, H100, ParallelLayout(attention_tp=8, expert_tp=8), "bf16"), wl)
    assert r.components["kv_cache"] == pytest.approx(8 * 327_680 / 8 * 4096)


def test_gqa_kv_heads_replicate_beyond_their_count():
    q = cat.model("qwen3-235b-a22b")  # 4 KV heads: TP 8 keeps one head per rank
    wl = Workload(batch=1, input_len=1000, output_len=24)
    r = memory.per_gpu_memory(Deployment(q, H200, ParallelLayout(attention_tp=8, ep=8), "fp8"), wl)
    assert r.components["kv_cache"] == pytest.approx(1024 * 2 * 94 / 4 * 1024)


def test_sliding_window_caps_the_cache():
    m = cat.model("mistral-7b")  # every layer windowed at 4096
    per_token = 2 * 8 * 128 * 2 * 32
    assert memory.kv_bytes_per_sequence(m, 2048) == per_token * 2048
    assert memory.kv_bytes_per_sequence(m, 32768) == per_token * 4096
    g = cat.model("gpt-oss-120b")  # 18 of 36 layers windowed at 128
    per_layer = 2 * 8 * 64 * 2
    assert memory.kv_bytes_per_sequence(g, 100_000) == per_layer * (18 * 100_000 + 18 * 128)
    np.testing.assert_allclose(
        memory.kv_bytes_per_sequence(g, np.array([64, 128])), per_layer * 36 * np.array([64, 128])
    )


def test_tp_shards_attention_and_keeps_mla_down_projections_whole():
    m = cat.model("deepseek-v3")
    # replicated: q_a 7168x1536 + 1536 + kv_a 7168x576 + 512; sharded: q_b, kv_b, o
    replicated = 11_010_048 + 1_536 + 4_128_768 + 512
    sharded = 37_748_736 + 16_777_216 + 117_440_512
    assert params.attention_params_per_rank(m, 8) == pytest.approx(replicated + sharded / 8)
    l70 = cat.model("llama-3-70b")
    # q,o 8192 x 8192 each sharded; k,v 8192 x 1024 each: 8 KV heads over TP 16 -> one head per rank
    assert params.attention_params_per_rank(l70, 16) == pytest.approx(2 * 8192**2 / 16 + 2 * 8192 * 1024 / 8)


def test_pipeline_stages_put_embedding_first_and_head_last():
    m = cat.model("llama-3-70b")
    lay = ParallelLayout(attention_tp=1, expert_tp=1, pp=4)
    r = memory.per_gpu_memory(Deployment(m, H100, lay, "bf16"), ONE_TOKEN)
    assert r.num_stages == 4 and r.stage in (0, 3)  # the stages with a vocabulary table are heaviest
    assert r.components["dense_ffn"] == pytest.approx(20 * 3 * 8192 * 28672 * 2)


def test_expert_parallel_and_redundant_experts():
    m = cat.model("deepseek-v3")
    a = MemoryAssumptions(redundant_experts=32)
    r = memory.per_gpu_memory(
        Deployment(m, H200, ParallelLayout(attention_dp=32, ep=32), "fp8", assumptions=a), ONE_TOKEN
    )
    # (256 + 32) / 32 = 9 expert slots per GPU x 58 MoE layers x 3 x 7168 x 2048 x (1 + 4/16384) bytes
    assert r.components["routed_experts"] == pytest.approx(9 * 58 * 3 * 7168 * 2048 * (1 + 4 / 16384))
    with pytest.raises(ValueError, match="EP 48 does not divide the 256 routed experts"):
        memory.per_gpu_memory(Deployment(m, H200, ParallelLayout(attention_dp=48, ep=48), "fp8"), ONE_TOKEN)


def test_invalid_layouts_are_named():
    m = cat.model("llama-3-70b")
    with pytest.raises(ValueError, match="attention TP 3 does not divide the 64 query heads"):
        memory.per_gpu_memory(Deployment(m, H100, ParallelLayout(attention_tp=3, expert_tp=3), "bf16"), ONE_TOKEN)
    with pytest.raises(ValueError, match="dense model has no experts"):
        memory.per_gpu_memory(Deployment(m, H100, ParallelLayout(attention_dp=2, ep=2), "bf16"), ONE_TOKEN)


def test_max_concurrent_sequences_is_budget_over_per_sequence_kv():
    m = cat.model("deepseek-v3")
    lay = ParallelLayout(attention_tp=8, ep=8)
    r = memory.per_gpu_memory(Deployment(m, H200, lay, "fp8"), ONE_TOKEN)
    n = memory.max_concurrent_sequences(Deployment(m, H200, lay, "fp8"), np.array([1024, 8192]))
    assert list(n) == [int(r.kv_budget_bytes // (70_272 * 1024)), int(r.kv_budget_bytes // (70_272 * 8192))]
    # DP attention: attention weights are replicated (smaller budget), but each rank keeps only its own
    # sequences, so the deployment holds 8 x its per-GPU count, far more than TP 8 with a replicated latent
    dp = ParallelLayout(attention_dp=8, ep=8)
    r_dp = memory.per_gpu_memory(Deployment(m, H200, dp, "fp8"), ONE_TOKEN)
    assert r_dp.kv_budget_bytes < r.kv_budget_bytes
    n_dp = memory.max_concurrent_sequences(Deployment(m, H200, dp, "fp8"), 8192)
    assert n_dp == 8 * int(r_dp.kv_budget_bytes // (70_272 * 8192)) and n_dp > 4 * n[1]


def test_max_context_len_inverts_the_sequence_count():
    m, lay = cat.model("llama-3-70b"), ParallelLayout(attention_tp=4, expert_tp=4)
    c = memory.max_context_len(Deployment(m, H100, lay, "fp8"), 200)
    assert 1000 < c < 8192
    assert memory.max_concurrent_sequences(Deployment(m, H100, lay, "fp8"), c) >= 200
    assert memory.max_concurrent_sequences(Deployment(m, H100, lay, "fp8"), c + 1) < 200
    # capped by the model's 8,192 positions when memory is plentiful
    assert memory.max_context_len(Deployment(m, B200, ParallelLayout(attention_tp=8, expert_tp=8), "fp8"), 1) == 8192


def test_draft_methods():
    ds = cat.model("deepseek-v3")
    assert memory.draft_params(ds, SpecDecodeConfig(method="mtp")) == ds.mtp_params
    with pytest.raises(ValueError, match="has no MTP module"):
        memory.draft_params(cat.model("mixtral-8x7b"), SpecDecodeConfig(method="mtp"))
    l70 = cat.model("llama-3-70b")
    # EAGLE head: one Llama-3 70B layer (attention 150,994,944 + FFN 3 x 8192 x 28672) + fc 3h x h + 2 norms
    assert memory.draft_params(l70, SpecDecodeConfig(method="eagle")) == (
        150_994_944 + 3 * 8192 * 28672 + 3 * 8192 * 8192 + 2 * 8192
    )
    with pytest.raises(ValidationError, match="needs draft_model_id"):
        SpecDecodeConfig(method="draft_model")


def test_precision_support():
    assert precision_support(A100, "fp8").status == "emulated"
    assert "no fp8 tensor cores" in precision_support(A100, "fp8").message
    assert precision_support(H100, "fp8").native
    assert precision_support(H100, "nvfp4").status == "emulated"
    assert precision_support(B200, "nvfp4").native
    assert precision_support(cat.gpu("mi355x"), "mxfp4").native
    assert not precision_support(cat.gpu("mi355x"), "nvfp4").native
    assert precision_support(H100, "int4").status == "weight_only"


def test_min_gpus_accepts_ids_and_reports_impossible():
    m = cat.model("kimi-k2")
    assert memory.min_gpus(m, "gb200", "fp8") > memory.min_gpus(m, "gb300", "fp8") - 1
    with pytest.raises(ValueError, match="does not fit on 8 or fewer"):
        memory.min_gpus(m, "rtx-4090", "bf16", max_gpus=8)
    with pytest.raises(ValueError, match="unknown GPU id"):
        memory.min_gpus(m, "h100", "fp8")


def test_every_catalog_model_on_every_gpu_has_an_answer():
    for m in cat.models.values():
        for g in cat.gpus.values():
            n = memory.min_gpus(m, g, "fp8")
            lay = default_layout(m, n, g.gpus_per_node)
            assert memory.per_gpu_memory(Deployment(m, g, lay, "fp8"), ONE_TOKEN).fits


def test_fit_status_names_what_is_short():
    # Mixtral 8x7B bf16 (46.7B params = 93.4 GB of weights) on one H100 (80 GB): not even the weights fit;
    # on 2 x H100 (TP2, 46.7 GB each) the weights fit and one 4K sequence does; 2,000 sequences of 32K
    # (each 32,768 x 32 layers x 2 x 8 x 128 x 2 B = 4.29 GB of KV) do not
    cat = load_catalog()
    m, h100 = cat.model("mixtral-8x7b"), cat.gpu("h100-sxm")
    one = memory.per_gpu_memory(
        Deployment(m, h100, ParallelLayout(), "bf16"), Workload(batch=1, input_len=4096, output_len=1)
    )
    assert one.status == "weights_short" and one.kv_budget_bytes <= 0
    tp2 = ParallelLayout(attention_tp=2, ep=2)
    ok = memory.per_gpu_memory(Deployment(m, h100, tp2, "bf16"), Workload(batch=1, input_len=4096, output_len=1))
    assert ok.status == "fits"
    big = memory.per_gpu_memory(Deployment(m, h100, tp2, "bf16"), Workload(batch=2000, input_len=32767, output_len=1))
    assert big.status == "kv_short" and big.kv_budget_bytes > 0


def test_a_stage_that_keeps_no_kv_bounds_no_batch():
    # Hunyuan-Large shares K/V across layer pairs (cross-layer attention): its 32 odd layers keep none. At PP 64 each
    # stage is one layer, so half the stages hold nothing per sequence and the bound is the K/V-storing stages'. One
    # GQA layer's K/V at 4,096 tokens in bf16, by hand: 2 x 8 KV heads x 80 x 2 B x 4,096 = 10,485,760 B a sequence.
    # It divided by zero here (a RuntimeWarning, and NaN -> a negative count where the stage's weights do not fit).
    import warnings

    from core.catalog import load_catalog as _load
    from core.deployment.specs import Scenario
    from core.scenario.deploy import resolve

    cat = _load()

    def deployment(util: float):
        s = Scenario(
            model_id="hunyuan-large",
            gpu_id="h100-sxm",
            num_nodes=8,
            gpus_per_node=8,
            layout=ParallelLayout(pp=64),
            precision=Precision(weights="fp8", kv_cache="bf16"),
            workload=Workload(input_len=2048, output_len=2048),
            memory=MemoryAssumptions(gpu_memory_utilization=util),
        )
        return resolve(s, cat)

    d = deployment(0.9)
    stages = memory.stage_memories(d)
    per_seq = sorted({round(s.kv_bytes_per_sequence) for s in stages})
    assert per_seq == [0, 10_485_760]
    expected = min(int(s.kv_budget_bytes // 10_485_760) for s in stages if s.kv_bytes_per_sequence > 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert memory.max_concurrent_sequences(d, 4096) == expected > 0
        # 0.05 of 80 GB is 4 GB, less than a stage's ~6 GB of FP8 weights: no sequence fits anywhere
        assert memory.max_concurrent_sequences(deployment(0.05), 4096) == 0
