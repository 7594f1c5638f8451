"""Current-generation models whose layers the planner already models (issue 12, first part):
Qwen3-Coder-480B-A35B (qwen3_moe), Kimi-K2.5 (kimi_k25: Kimi-K2 text + MoonViT), GLM-5 (glm_moe_dsa:
DeepSeek-V3.2 layout). Published counts and the cache sizes are computed by hand below."""

import pytest

from core import hf as hf_config
from core import memory
from core.catalog import load_catalog
from core.deployment.bundle import Deployment
from core.deployment.parallel import default_layout
from core.model import params
from core.model.mixers.gqa import GQA
from core.model.mixers.linear import KDA, GatedDeltaNet, Mamba2
from core.model.mixers.mla import MLA
from tests.unit._layers import groups, layers_of, with_mixers

cat = load_catalog()


@pytest.mark.parametrize(
    "model_id,total,active",
    [
        ("qwen3-coder-480b-a35b", 480e9, 35e9),
        ("kimi-k2.5", 1000e9, 32e9),  # "1T" is rounded: 1026.4B, +2.6%, as for Kimi-K2
        ("glm-5", 744e9, 40e9),
    ],
)
def test_published_counts_within_3_percent(model_id, total, active):
    m = cat.model(model_id)
    assert params.total_params(m, include_vision=False) == pytest.approx(total, rel=0.03)
    assert params.active_params(m) == pytest.approx(active, rel=0.03)


def test_conventions_per_vendor():
    # Moonshot counts the lm_head but not the input embedding; Z.ai counts neither; Qwen counts both
    assert cat.model("kimi-k2.5").published.active_convention == "excl_input_embedding"
    assert cat.model("glm-5").published.active_convention == "non_embedding"
    assert cat.model("qwen3-coder-480b-a35b").published.active_convention == "incl_embedding_and_head"
    # GLM-5's active count moves by its 154,880 x 6,144 = 0.95B embedding table under another convention
    glm = cat.model("glm-5")
    assert (
        params.active_params(glm, "excl_input_embedding") - params.active_params(glm, "non_embedding")
        == 154_880 * 6_144
    )


def test_kv_bytes_per_token():
    # Qwen3-Coder: 2 x 8 KV heads x 128 x 2 B = 4,096 B per layer, x 62 layers = 253,952 B
    assert memory.kv_bytes_per_token(cat.model("qwen3-coder-480b-a35b"), "bf16") == 253_952
    # Kimi-K2.5: MLA (512 + 64) x 2 B = 1,152 B per layer, x 61 = 70,272 B
    assert memory.kv_bytes_per_token(cat.model("kimi-k2.5"), "bf16") == 70_272
    # GLM-5: 1,152 B MLA + 128 B FP8 indexer key + 4 B scale = 1,284 B per layer, x 78 = 100,152 B
    assert memory.kv_bytes_per_token(cat.model("glm-5"), "bf16") == 100_152


@pytest.mark.parametrize("tokens,gib", [(4096, 0.38), (32768, 3.06), (131072, 12.23)])
def test_glm5_cache_per_sequence(tokens, gib):
    # 100,152 B x tokens / 2^30: 0.38 / 3.06 / 12.23 GiB at 4K / 32K / 128K
    got = memory.kv_bytes_per_sequence(cat.model("glm-5"), tokens, "bf16") / 2**30
    assert got == pytest.approx(gib, abs=0.005)


def test_moonvit_estimate_by_hand():
    # per layer: 4 x 1152^2 + 4 x 1152 (qkv, o with biases) + 2 x 1152 x 4304 + 4304 + 1152 (MLP) + 4 x 1152 (2 LN)
    per_layer = 4 * 1152**2 + 4 * 1152 + 2 * 1152 * 4304 + 4304 + 1152 + 4 * 1152
    assert per_layer == 15_239_504
    patch = 3 * 14 * 14 * 1152 + 1152  # 678,528
    pos = 64 * 64 * 1152 + 4 * 1152  # 4,723,200
    merger = 2 * 1152 + 4608**2 + 4608 + 4608 * 7168 + 7168  # LN + 4608->4608->7168 MLP = 54,277,888
    expected = 27 * per_layer + patch + pos + 2 * 1152 + merger
    assert expected == 471_148_528
    assert cat.model("kimi-k2.5").vision_params == expected


def test_glm5_mtp_is_counted_apart():
    # one MTP layer of ~9.95B (a full MoE layer + eh_proj + norms), excluded from 744B
    assert params.mtp_params(cat.model("glm-5")) == pytest.approx(9.95e9, rel=0.005)


def test_kimi_k25_needs_text_config():
    with pytest.raises(ValueError, match="text_config"):
        hf_config.model_from_hf_config({"model_type": "kimi_k25"}, model_id="k")


# ---- Qwen3.5: Gated DeltaNet linear attention beside gated full attention

Q397 = cat.model("qwen3.5-397b-a17b")


def test_qwen35_layer_pattern_and_module_sizes():
    linear = layers_of(Q397, GatedDeltaNet)
    assert len(linear) == 45 and len(layers_of(Q397, GQA)) == 15
    assert 3 not in linear and 0 in linear  # every 4th is full
    # GDN (h 4096; 16 key heads x 128, 64 value heads x 128, conv kernel 4):
    # in_proj_qkvz 4096 x 20480 + in_proj_ba 4096 x 128 + conv 12288 x 4 + dt_bias/A_log 128 + norm 128
    # + out_proj 8192 x 4096 = 118,014,208
    (gdn,) = groups(Q397, GatedDeltaNet)
    assert gdn.mixer.params(4096) == 4096 * 20480 + 4096 * 128 + 12288 * 4 + 128 + 128 + 8192 * 4096 == 118_014_208
    # gated GQA: q 4096 x (32 x 256 x 2) + k, v 2 x 4096 x 512 + o 8192 x 4096 + q/k norms 512 = 104,858,112
    assert params.attention_params_per_layer(Q397) == 104_858_112


def test_qwen35_state_and_cache_per_sequence():
    # state: 64 value heads x 128 x 128 x 4 B (fp32) + 12,288 conv channels x 3 x 2 B = 4,268,032 B per layer
    assert groups(Q397, GatedDeltaNet)[0].mixer.state_bytes() == 64 * 128 * 128 * 4 + 12288 * 3 * 2 == 4_268_032
    assert memory.linear_state_bytes_per_sequence(Q397) / 2**20 == pytest.approx(183.16, abs=0.01)  # 45 layers
    # only the 15 full layers grow with context: 2 KV heads x 256 x 2 (K, V) x 2 B = 2,048 B per token each
    assert memory.kv_bytes_per_token(Q397, "bf16") == 15 * 2048
    # at 4K: 15 x 2,048 x 4,096 + 45 x 4,268,032 = 317,890,560 B = 0.296 GiB; 32K 1.12 GiB; 128K 3.93 GiB
    for tokens, gib in ((4096, 0.296), (32768, 1.12), (131072, 3.93)):
        assert memory.kv_bytes_per_sequence(Q397, tokens) / 2**30 == pytest.approx(gib, abs=0.005)
    parts = memory.cache_by_layer_type(Q397, 4096)
    assert parts == {"full-attention K/V": 15 * 2048 * 4096, "linear-attention state (fixed)": 45 * 4_268_032}
    # the state is worth 183.2 MiB / 30,720 B = 6,252 tokens of K/V
    assert memory.state_equivalent_tokens(Q397) == pytest.approx(45 * 4_268_032 / 30_720)


def test_qwen35_state_splits_over_tp_but_one_kv_head_does_not():
    # TP 4: 2 KV heads cannot split four ways (each rank keeps one: / 2); GDN heads split four ways
    per_gpu = memory.kv_bytes_per_sequence_on_gpu(Q397, 4096, "bf16", 4, range(60))
    assert per_gpu == pytest.approx(15 * 2048 * 4096 / 2 + 45 * 4_268_032 / 4)


def test_qwen35_concurrency_is_bounded_by_states_at_short_context():
    # default layout on 8 H200s (TP 8): per GPU a 256-token sequence keeps 15 x 2,048 x 256 / 2 = 3,932,160 B
    # of K/V (2 KV heads: each rank keeps one) and 45 x 4,268,032 / 8 = 24,007,680 B of state, so dropping
    # the state would fit (3,932,160 + 24,007,680) / 3,932,160 = 7.1x as many sequences
    from core.deployment.specs import Workload

    gpu = cat.gpu("h200")
    lay = default_layout(Q397, 8)
    budget = memory.per_gpu_memory(
        Deployment(Q397, gpu, lay, "fp8"), Workload(batch=1, input_len=1, output_len=1)
    ).kv_budget_bytes
    n = int(memory.max_concurrent_sequences(Deployment(Q397, gpu, lay, "fp8"), [256])[0])
    assert n == budget // (3_932_160 + 24_007_680)  # one attention-DP rank: every sequence on every GPU
    assert budget // 3_932_160 / n == pytest.approx((3_932_160 + 24_007_680) / 3_932_160, rel=0.01)


# ---- Gemma 4: sliding and global layers with different head sizes, dense MLP beside the MoE

G4 = cat.model("gemma-4-26b-a4b")


def test_gemma4_attention_by_hand():
    # sliding: q 2816 x 16 x 256 + k, v 2 x 2816 x 8 x 256 + o 4096 x 2816 + q/k norms 512 = 34,603,520
    sliding, glob = G4.mixers
    assert sliding.mixer.window == 1024 and glob.mixer.window is None and len(glob.layers) == 5
    assert params.attention_params_per_layer(G4) == 2816 * 4096 + 2 * 2816 * 2048 + 4096 * 2816 + 512 == 34_603_520
    assert sliding.mixer.params(2816) == 34_603_520
    # global: q 2816 x 16 x 512 + k 2816 x 2 x 512 (no v_proj) + o 8192 x 2816 + q/k norms 1024 = 49,021,952
    assert glob.mixer.params(2816) == 2816 * 8192 + 2816 * 1024 + 8192 * 2816 + 1024 == 49_021_952


def test_gemma4_cache_is_a_curve():
    # first 1,024 tokens: 25 x 8,192 + 5 x 4,096 = 225,280 B per token; after: only the globals, 20,480 B
    assert memory.kv_bytes_per_token(G4) == 225_280
    at_4k = 25 * 8192 * 1024 + 5 * 4096 * 4096  # 293,601,280 B = 0.27 GiB
    assert memory.kv_bytes_per_sequence(G4, 4096) == at_4k
    assert memory.kv_bytes_per_sequence(G4, 8192) - memory.kv_bytes_per_sequence(G4, 4096) == 4096 * 20_480
    for tokens, gib in ((32768, 0.82), (131072, 2.70)):
        assert memory.kv_bytes_per_sequence(G4, tokens) / 2**30 == pytest.approx(gib, abs=0.005)


def test_gemma4_global_heads_stop_splitting_at_tp2():
    # TP 4: sliding KV (8 heads) splits 4 ways, global KV (2 heads) only 2 ways
    per_gpu = memory.kv_bytes_per_sequence_on_gpu(G4, 4096, "bf16", 4, range(30))
    assert per_gpu == pytest.approx(25 * 8192 * 1024 / 4 + 5 * 4096 * 4096 / 2)


# ---- MiniMax-M3: GQA everywhere, index keys on the 57 sparse layers

M3 = cat.model("minimax-m3")


def test_minimax_m3_index_keys_on_sparse_layers_only():
    plain, sparse = M3.mixers
    assert sparse.mixer.indexer is not None and plain.mixer.indexer is None
    assert len(sparse.layers) == 57 and sparse.layers[0] == 3 and M3.dense_layers == (0, 1, 2)
    # indexer: index_q 6144 x 4 x 128 + index_k 6144 x 128 + q/k norms 256 (no weight projection)
    assert sparse.mixer.indexer.params(6144, 6144) == 6144 * 512 + 6144 * 128 + 256 == 3_932_416
    assert sparse.mixer.params(6144) - plain.mixer.params(6144) == 3_932_416
    # cache per token: 60 x 2,048 B of K/V + 57 x 256 B of bf16 index keys = 137,472 B
    assert memory.kv_bytes_per_token(M3) == 60 * 2048 + 57 * 256 == 137_472
    for tokens, gib in ((4096, 0.52), (32768, 4.20), (131072, 16.78)):
        assert memory.kv_bytes_per_sequence(M3, tokens) / 2**30 == pytest.approx(gib, abs=0.005)


# ---- decode traffic: sparse attention reads a fraction of what it stores; linear states are read and written


def test_sparse_attention_reads_topk_plus_an_index_scan():
    glm = cat.model("glm-5")
    # 78 layers x (2,048 top-k tokens x 1,152 B + 131,072 index keys x 132 B) = 1,533,542,400 B read ...
    assert memory.decode_read_bytes_per_sequence(glm, 131072) == 78 * (2048 * 1152 + 131072 * 132)
    # ... of 78 x 131,072 x 1,284 B = 13.13 GB stored
    assert memory.kv_bytes_per_sequence(glm, 131072) == 78 * 131072 * 1284
    # MiniMax-M3: 3 dense-attention layers read all; 57 sparse layers read 17 blocks x 128 and scan the keys
    m3 = cat.model("minimax-m3")
    assert m3.mixers[1].mixer.indexer.topk_tokens == (16 + 1) * 128
    assert memory.decode_read_bytes_per_sequence(m3, 131072) == 3 * 131072 * 2048 + 57 * (2176 * 2048 + 131072 * 256)
    # below the top-k everything stored is read
    assert memory.decode_read_bytes_per_sequence(glm, 1024) == memory.kv_bytes_per_sequence(glm, 1024)


def _decode_scores_s(model, ctx, tp=8):
    from core import perf
    from core.deployment.specs import ParallelLayout
    from core.hardware.efficiency import resolve_efficiency

    eff = resolve_efficiency("h200", cat.efficiency)
    lay = ParallelLayout(attention_tp=tp, ep=tp)
    cfg = perf.StepConfig(phase="decode", tokens_per_gpu=64, context_len=ctx)
    return perf.step_time(Deployment(model, cat.gpu("h200"), lay, "fp8", eff), cfg).components["attention_scores"]


def test_sparse_decode_attention_grows_with_the_index_scan_not_the_cache():
    glm = cat.model("glm-5")
    idx = glm.head_mixer.indexer
    dense_twin = with_mixers(glm, MLA, indexer=idx.model_copy(update={"topk_tokens": 0}))
    # at 128K the sparse layers read ~1.5 GB instead of ~13 GB per sequence: far faster than the dense twin
    # (not the full 8.7x: at TP8 each GPU's 8 query heads fill an eighth of the 64-row MMA tile, so the
    # scoring is partly compute-bound for both, the sparse layers' index scan included)
    assert _decode_scores_s(glm, 131072) < 0.35 * _decode_scores_s(dense_twin, 131072)
    # at 1K (below the top-k) both read the same cache
    assert _decode_scores_s(glm, 1024) == pytest.approx(_decode_scores_s(dense_twin, 1024), rel=0.05)


def test_linear_state_traffic_is_constant_in_context():
    q = cat.model("qwen3.5-397b-a17b")
    no_state = with_mixers(q, GatedDeltaNet, key_head_dim=64)  # half the recurrent state
    # the state adds the same read + write whatever the context: the difference does not grow
    d1 = _decode_scores_s(q, 1024) - _decode_scores_s(no_state, 1024)
    d2 = _decode_scores_s(q, 65536) - _decode_scores_s(no_state, 65536)
    assert d1 > 0 and d2 == pytest.approx(d1, rel=0.05)


def test_kimi_k25_int4_experts_preset_from_its_config():
    import json

    cfg = json.loads((cat.root / "models" / "kimi-k2.5" / "config.json").read_text())
    # compressed-tensors, 4-bit int groups of 32; attention, shared experts, dense MLPs on the ignore list
    assert hf_config.quant_preset(cfg) == {"weights": "bf16", "routed_experts": "int4"}


# ---- DeepSeek-V4: compressed sparse / heavily compressed attention, hyper-connections, hash layers

V4F = cat.model("deepseek-v4-flash")
V4P = cat.model("deepseek-v4-pro")


def test_v4_layer_kinds_and_attention_blocks():
    def ratios(m):
        return sorted((g.mixer.ratio, len(g.layers)) for g in m.mixers)

    assert ratios(V4F) == [(0, 2), (4, 21), (128, 20)] and ratios(V4P) == [(4, 30), (128, 31)]
    assert all(g.mixer.sparse == (g.mixer.ratio == 4) for m in (V4F, V4P) for g in m.mixers)
    # the MTP block's entry (the 44th / 62nd) is 0: window only
    assert V4F.mtp_mixer.ratio == 0 and V4P.mtp_mixer.ratio == 0
    by_ratio = {g.mixer.ratio: g.mixer.params(4096) for g in V4F.mixers}
    # Flash attention block without a compressor (layers 0, 1): wq_a 4096 x 1024 + q_norm 1024
    # + wq_b 1024 x 64 x 512 + wkv 4096 x 512 + kv_norm 512 + wo_a 64 x 512 x 1024 + wo_b 8 x 1024 x 4096 + 64 sinks
    base = 4096 * 1024 + 1024 + 1024 * 32768 + 4096 * 512 + 512 + 32768 * 1024 + 8192 * 4096 + 64
    assert by_ratio[0] == base == 106_956_352
    # an HCA layer adds a compressor: ape 128 x 512 + wkv, wgate 2 x 4096 x 512 + norm 512
    assert by_ratio[128] - base == 128 * 512 + 2 * 4096 * 512 + 512
    # a CSA layer: a compressor with overlapping windows (coff 2): ape 4 x 1024 + wkv, wgate 2 x 4096 x 1024
    # + norm 512, and an indexer: wq_b 1024 x 64 x 128 + weights_proj 4096 x 64 + its compressor at dim 128
    # (4 x 256 + 2 x 4096 x 256 + 128)
    assert by_ratio[4] - base == (4 * 1024 + 2 * 4096 * 1024 + 512) + (1024 * 64 * 128 + 4096 * 64) + (
        4 * 256 + 2 * 4096 * 256 + 128
    )


def test_v4_cache_by_hand():
    # Flash at 4,096 tokens: window 43 x 584 x 128 + CSA 21 x (584 + 68) x 1,024 + HCA 20 x 584 x 32
    # + states 21 x 81,920 + 20 x 524,288 = 29,814,784 B
    assert (
        memory.kv_bytes_per_sequence(V4F, 4096)
        == 43 * 584 * 128 + 21 * 652 * 1024 + 20 * 584 * 32 + 21 * 81920 + 20 * 524288
    )
    assert memory.fixed_state_bytes_per_sequence(V4F) / 2**20 == pytest.approx(11.64, abs=0.01)
    # long-context marginal: 21 x 652 / 4 + 20 x 584 / 128 = 3,514.25 B per token (Pro: 5,031.4)
    assert memory.kv_bytes_per_token(V4F) == pytest.approx(3514.25)
    assert memory.kv_bytes_per_token(V4P) == pytest.approx(30 * 652 / 4 + 31 * 584 / 128)
    # 1M tokens: Flash 3.45 GiB, Pro 4.94 GiB (reference table)
    assert memory.kv_bytes_per_sequence(V4F, 1_048_576) / 2**30 == pytest.approx(3.45, abs=0.005)
    assert memory.kv_bytes_per_sequence(V4P, 1_048_576) / 2**30 == pytest.approx(4.94, abs=0.005)
    # the fp8/bf16 cache choice does not change V4's fixed serving format
    assert memory.kv_bytes_per_sequence(V4F, 4096, "fp8") == memory.kv_bytes_per_sequence(V4F, 4096, "bf16")


def test_v4_decode_reads_68_mb_at_128k():
    # window 43 x 584 x 128 + top-512 entries on 21 CSA layers + a scan of 32,768 index keys x 68 B on each
    # + every HCA entry (20 x 1,024 x 584) = 68,246,528 B; the compressor states are read once per entry they
    # yield: 21 x 81,920 / 4 + 20 x 524,288 / 128 = 512,000 B per token
    read = memory.decode_read_bytes_per_sequence(V4F, 131072)
    assert read == 43 * 584 * 128 + 21 * (512 * 584 + 32768 * 68) + 20 * 1024 * 584 + 21 * 81920 / 4 + 20 * 524288 / 128
    assert 43 * 584 * 128 + 21 * (512 * 584 + 32768 * 68) + 20 * 1024 * 584 == 68_246_528


def test_v4_single_kv_head_is_replicated_over_tp():
    one = memory.kv_bytes_per_sequence_on_gpu(V4F, 65536, "bf16", 1, range(43))
    assert memory.kv_bytes_per_sequence_on_gpu(V4F, 65536, "bf16", 8, range(43)) == one


def test_v4_hash_table_is_total_not_active():
    # 3 hash layers x 129,280 tokens x top-6 = 2,327,040 entries: in the total, never active
    assert V4F.inactive_extra_params == 3 * 129280 * 6
    b, a = params.breakdown(V4F), params.active_breakdown(V4F)
    assert b.router - a.router == 3 * 129280 * 6


# ---- Kimi-K3: KDA linear attention, gated MLA, latent MoE

K3 = cat.model("kimi-k3")


def test_k3_layers_and_latent_experts():
    assert len(layers_of(K3, KDA)) == 69 and len(layers_of(K3, MLA)) == 24 and K3.dense_layers == (0,)
    # KDA: 4 x 7168 x 12288 + 3 x 12288 x 4 + 7168 x 128 + 128 x 12288 + 12288 + 96 + 7168 x 96 + 128
    # + 12288 x 7168 = 443,740,384
    assert groups(K3, KDA)[0].mixer.params(7168) == 443_740_384
    assert groups(K3, MLA)[0].mixer.output_gate
    # a latent expert runs at 3584: 3 x 3584 x 3072 = 33,030,144 (a full-width one would be twice that)
    assert params.expert_params(K3) == 3 * 3584 * 3072
    assert K3.moe.latent_size == 3584


def test_k3_state_dominates_short_contexts():
    # 69 x (96 x 128 x 128 x 4 + 3 x 12288 x 3 x 2) = 69 x 6,512,640 B = 428.6 MiB
    assert memory.linear_state_bytes_per_sequence(K3) == 69 * 6_512_640
    assert memory.kv_bytes_per_token(K3) == 24 * 1152  # 27,648 B per token
    for tokens, gib in ((4096, 0.52), (32768, 1.26), (131072, 3.79), (1_048_576, 27.42)):
        assert memory.kv_bytes_per_sequence(K3, tokens) / 2**30 == pytest.approx(gib, abs=0.005)


# ---- Nemotron-3-Super: Mamba-2 / attention / latent-MoE blocks

NEM = cat.model("nemotron-3-super-120b-a12b")


def test_nemotron_blocks_become_mixer_layers():
    # 88 blocks = 40 M + 40 E + 8 *: 48 mixer layers, 40 with an MoE block, 8 (an M before a *) without
    assert (NEM.num_layers, len(layers_of(NEM, Mamba2)), len(layers_of(NEM, GQA))) == (48, 40, 8)
    assert NEM.num_moe_layers == 40 and len(NEM.ffn_free_layers) == 8
    # relu2 experts: 2 matrices at the 1,024 latent width: 2 x 1024 x 2688
    assert params.expert_params(NEM) == 2 * 1024 * 2688
    # Mamba-2: in_proj 4096 x (2 x 8192 + 2 x 8 x 128 + 128) + conv 10240 x 4 + bias 10240 + 3 x 128
    # + norm 8192 + out_proj 8192 x 4096
    assert groups(NEM, Mamba2)[0].mixer.params(4096) == 4096 * 18560 + 10240 * 4 + 10240 + 384 + 8192 + 8192 * 4096


def test_nemotron_state_and_cache():
    assert groups(NEM, Mamba2)[0].mixer.state_bytes() == 128 * 64 * 128 * 4 + 10240 * 3 * 2 == 4_255_744
    assert memory.kv_bytes_per_token(NEM) == 8 * 1024
    for tokens, gib in ((4096, 0.19), (32768, 0.41), (131072, 1.16), (1_048_576, 8.16)):
        assert memory.kv_bytes_per_sequence(NEM, tokens) / 2**30 == pytest.approx(gib, abs=0.005)


def test_unmodelled_parts_are_named():
    from core.report.catalog_rows import model_caveats

    assert any("latent" in c.lower() for c in model_caveats(K3))
    assert any("Hyper-connections" in c for c in model_caveats(V4F))
    assert model_caveats(cat.model("deepseek-v3")) == []


@pytest.mark.parametrize("tokens", [32768, 131072])
def test_v4_flash_cache_at_32k_and_128k_by_hand(tokens):
    # window 43 x 584 x 128 + CSA 21 x 652 x tokens/4 + HCA 20 x 584 x tokens/128 + 12,206,080 B of state
    expected = 43 * 584 * 128 + 21 * 652 * (tokens // 4) + 20 * 584 * (tokens // 128) + 12_206_080
    assert memory.kv_bytes_per_sequence(V4F, tokens) == expected


@pytest.mark.parametrize(
    "model_id,gpu_id",
    [
        ("qwen3.5-35b-a3b", "h200"),
        ("gemma-4-26b-a4b", "h100-sxm"),
        ("minimax-m3", "b200"),
        ("nemotron-3-super-120b-a12b", "b200"),
    ],
)
def test_weights_on_one_gpu_equal_the_total(model_id, gpu_id):
    # one GPU (TP 1, no EP, bf16 everywhere): its weights are the whole model, so every layer kind
    # (linear mixers, global layers, partial indexers, FFN-free layers) must be counted once
    from core.deployment.specs import ParallelLayout, Workload

    m = cat.model(model_id)
    st = memory.stage_memories(
        Deployment(m, cat.gpu(gpu_id), ParallelLayout(), "bf16"), Workload(batch=1, input_len=1, output_len=1)
    )[0]
    assert st.weights_bytes == pytest.approx(2 * params.total_params(m), rel=1e-6)
