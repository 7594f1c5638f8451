"""Late-2026 catalog models whose model_type the importer already reads (issue 22, part a):
Qwen3.8-2.4T-A95B (qwen3_5_moe_text), Qwen3.6-35B-A3B (qwen3_5_moe), GLM-5.2 (glm_moe_dsa), Kimi-K2.6 and
Kimi-K2.7-Code (kimi_k25, NVIDIA's NVFP4 configs), Nemotron-3-Ultra-550B-A55B (nemotron_h, the layers_block_type
schema). Parameter counts, cache sizes and the quantisation presets are computed by hand below."""

import json

import pytest

from core import hf as hf_config
from core import memory
from core.catalog import load_catalog
from core.model import params
from core.model.mixers.gqa import GQA
from core.model.mixers.linear import GatedDeltaNet, Mamba2
from core.model.mixers.mla import MLA
from tests.unit._layers import groups, layers_of

cat = load_catalog()
NEW = ("qwen3.8-2.4t-a95b", "qwen3.6-35b-a3b", "glm-5.2", "kimi-k2.6", "kimi-k2.7-code", "nemotron-3-ultra-550b-a55b")


@pytest.mark.parametrize(
    "model_id,total,active",
    [
        ("qwen3.8-2.4t-a95b", 2400e9, 95e9),  # 2,419.80B (+0.83%) / 95.29B with embedding and head (+0.30%)
        ("glm-5.2", 744e9, 40e9),  # 743.91B (-0.01%) / 39.88B non-embedding (-0.30%)
        ("kimi-k2.6", 1000e9, 32e9),  # "1T" is rounded: 1,026.41B (+2.64%), as Kimi-K2 / K2.5; 31.69B (-0.98%)
        ("kimi-k2.7-code", 1000e9, 32e9),  # same shapes as K2.6
        ("nemotron-3-ultra-550b-a55b", 550e9, 55e9),  # 549.31B (-0.13%) / 54.99B without the input embedding
    ],
)
def test_published_counts_within_3_percent(model_id, total, active):
    m = cat.model(model_id)
    assert params.total_params(m, include_vision=False) == pytest.approx(total, rel=0.03)
    assert params.active_params(m) == pytest.approx(active, rel=0.03)


def test_qwen36_a3b_is_a_rounded_name():
    # 35B total: 34.66B (-0.97%); "3B" active is the name A3B: Qwen's convention gives 3.45B, inside [2.5, 3.5)
    m = cat.model("qwen3.6-35b-a3b")
    assert params.total_params(m, include_vision=False) == pytest.approx(35e9, rel=0.03)
    assert abs(params.active_params(m) - 3e9) <= 0.5e9 and m.published.active_rounded_to == 10**9


def test_conventions_per_vendor():
    conv = {i: cat.model(i).published.active_convention for i in NEW}
    assert conv["qwen3.8-2.4t-a95b"] == conv["qwen3.6-35b-a3b"] == "incl_embedding_and_head"
    assert conv["glm-5.2"] == "non_embedding"
    assert conv["kimi-k2.6"] == conv["kimi-k2.7-code"] == conv["nemotron-3-ultra-550b-a55b"] == "excl_input_embedding"
    assert not any(cat.model(i).published.includes_mtp or cat.model(i).published.includes_vision for i in NEW)


# ---- Qwen3.8-2.4T-A95B: Qwen3.5's layout, widened (hidden 8192, 92 layers, 512 experts top-10)

Q38 = cat.model("qwen3.8-2.4t-a95b")


def test_qwen38_counts_by_hand():
    assert len(layers_of(Q38, GatedDeltaNet)) == 69 and len(layers_of(Q38, GQA)) == 23
    # GDN: in_proj_qkvz 8192 x (2 x 16 x 128 + 2 x 128 x 128) + in_proj_ba 8192 x 256 + conv 20480 x 4
    # + dt_bias/A_log 256 + norm 128 + out_proj 16384 x 8192 = 438,387,072
    gdn = 8192 * 36864 + 8192 * 256 + 20480 * 4 + 256 + 128 + 16384 * 8192
    assert groups(Q38, GatedDeltaNet)[0].mixer.params(8192) == gdn == 438_387_072
    # gated GQA: q 8192 x (64 x 256 x 2) + k, v 2 x 8192 x 1024 + o 16384 x 8192 + q/k norms 512 = 419,430,912
    attn = 8192 * 32768 + 2 * 8192 * 1024 + 16384 * 8192 + 512
    assert params.attention_params_per_layer(Q38) == attn == 419_430_912
    # MoE layer: router 512 x 8192 + 512 experts x 3 x 8192 x 2048 + shared 3 x 8192 x 2048 + shared gate 8192,
    # plus 2 norms of 8192
    expert = 3 * 8192 * 2048
    moe = 512 * 8192 + 512 * expert + expert + 8192 + 2 * 8192
    embed = 2 * 248320 * 8192  # untied embedding and head
    total = 69 * gdn + 23 * attn + 92 * moe + embed + 8192
    assert total == 2_419_804_697_984 and params.total_params(Q38) == total
    # active: 10 of 512 experts, with embedding and head (Qwen): 95.29B
    active = 69 * gdn + 23 * attn + 92 * (512 * 8192 + 11 * expert + 8192 + 2 * 8192) + embed + 8192
    assert active == 95_287_866_752 and params.active_params(Q38) == active
    # MTP (excluded): fc 16384 -> 8192 + a full-attention layer + a whole MoE layer + 3 norms = 26.38B
    assert params.mtp_params(Q38) == 2 * 8192 * 8192 + attn + moe + 3 * 8192 == 26_378_027_520


def test_qwen38_state_and_cache():
    # state: 128 value heads x 128 x 128 x 4 B (fp32) + (2 x 16 x 128 + 128 x 128) conv channels x 3 x 2 B
    state = 128 * 128 * 128 * 4 + 20480 * 3 * 2
    assert groups(Q38, GatedDeltaNet)[0].mixer.state_bytes() == state == 8_511_488
    assert memory.linear_state_bytes_per_sequence(Q38) == 69 * state  # 560.1 MiB
    # K/V: 23 full layers x 4 KV heads x 256 x 2 (K, V) x 2 B = 94,208 B per token
    assert memory.kv_bytes_per_token(Q38, "bf16") == 23 * 4 * 256 * 2 * 2 == 94_208
    # 4K: 94,208 x 4,096 + 69 x 8,511,488 = 973,168,640 B = 0.906 GiB; 32K 3.42 GiB; 128K 12.05 GiB
    for tokens, gib in ((4096, 0.906), (32768, 3.42), (131072, 12.05)):
        assert memory.kv_bytes_per_sequence(Q38, tokens) / 2**30 == pytest.approx(gib, abs=0.005)
    # the state is worth 587,292,672 / 94,208 = 6,234 tokens of K/V
    assert memory.state_equivalent_tokens(Q38) == pytest.approx(69 * state / 94_208)


def test_qwen38_fp8_checkpoint_quantises_only_the_routed_experts():
    cfg = json.loads((cat.root / "models" / "qwen3.8-2.4t-a95b" / "config.json").read_text())
    # modules_to_not_convert lists GDN, self_attn, shared experts, routers, embeddings, lm_head, MTP
    assert hf_config.quant_preset(cfg) == {"weights": "bf16", "routed_experts": "fp8"}
    assert Q38.vision_params == 0  # text-only checkpoint (qwen3_5_moe_text)


# ---- Qwen3.6-35B-A3B: Qwen3.5-35B-A3B's shapes in NVIDIA's mixed-precision checkpoint

Q36 = cat.model("qwen3.6-35b-a3b")


def test_qwen36_has_qwen35_35b_shapes():
    q35 = cat.model("qwen3.5-35b-a3b")
    assert Q36.model_dump(include={"mixers", "moe", "hidden_size", "num_layers", "vocab_size"}) == q35.model_dump(
        include={"mixers", "moe", "hidden_size", "num_layers", "vocab_size"}
    )
    # 10 full layers x 2 KV heads x 256 x 2 x 2 B = 20,480 B per token; 30 GDN layers x (32 x 128 x 128 x 4
    # + (2 x 16 x 128 + 32 x 128) x 3 x 2) = 30 x 2,146,304 B of state (61.4 MiB)
    assert memory.kv_bytes_per_token(Q36, "bf16") == 20_480
    assert memory.linear_state_bytes_per_sequence(Q36) == 30 * (32 * 128 * 128 * 4 + 8192 * 3 * 2) == 64_389_120


def test_qwen36_nvfp4_preset():
    cfg = json.loads((cat.root / "models" / "qwen3.6-35b-a3b" / "config.json").read_text())
    # ModelOpt MIXED_PRECISION: experts (and shared experts, lm_head) NVFP4, attention and GDN FP8
    assert hf_config.quant_preset(cfg) == {"weights": "fp8", "routed_experts": "nvfp4"}


# ---- GLM-5.2: GLM-5's shapes; IndexShare: indexers on 21 of 78 layers, the other 57 reuse their top-k

G52 = cat.model("glm-5.2")


def test_glm52_counts_by_hand():
    # MLA: q 6144 x 2048 + 2048 + 2048 x 64 x 256; kv 6144 x 576 + 512 + 512 x 64 x (192 + 256); o 64 x 256 x 6144
    mla = (6144 * 2048 + 2048 + 2048 * 64 * 256) + (6144 * 576 + 512 + 512 * 64 * 448) + 64 * 256 * 6144
    # indexer: wq_b 2048 x 32 x 128 + wk 6144 x 128 + k norm 256 + weights_proj 6144 x 32 = 9,371,904
    idx = 2048 * 32 * 128 + 6144 * 128 + 256 + 6144 * 32
    assert idx == 9_371_904 and params.attention_params_per_layer(G52) == mla + idx  # layer 0: a full indexer
    expert = 3 * 6144 * 2048
    router = 256 * 6144 + 256
    # indexer weights on the 21 'full' layers only (the checkpoint's)
    total = 78 * mla + 21 * idx + 75 * (257 * expert + router) + 3 * 3 * 6144 * 12288 + 78 * 2 * 6144 + 6144
    total += 2 * 154880 * 6144  # untied embedding and head
    assert total == 743_377_019_904 and params.total_params(G52) == total
    # non-embedding active (Z.ai): 8 routed + 1 shared expert
    active = 78 * mla + 21 * idx + 75 * (9 * expert + router) + 3 * 3 * 6144 * 12288 + 78 * 2 * 6144 + 6144
    assert active == 39_347_364_864 and params.active_params(G52) == active
    assert total / 744e9 == pytest.approx(1, abs=0.03) and active / 40e9 == pytest.approx(1, abs=0.03)
    # the "753B" some pages quote is the total with the MTP layer: 743.4B + 9.95B
    assert (total + params.mtp_params(G52)) / 753e9 == pytest.approx(1, abs=0.003)


def test_glm52_cache_as_modelled():
    # every layer a 1,152 B bf16 MLA latent; the 21 full indexer layers a 128 B FP8 index key + 4 B scale:
    # 78 x 1,152 + 21 x 132 = 92,628 B (GLM-5, an indexer on every layer: 100,152 B)
    assert memory.kv_bytes_per_token(G52, "bf16") == 78 * 1152 + 21 * 132 == 92_628
    assert all(g.mixer.indexer and g.mixer.indexer.topk_tokens == 2048 for g in groups(G52, MLA))
    # 1M positions (max_position_embeddings 1,048,576): 92,628 x 2^20 B = 90.46 GiB per sequence
    assert G52.max_position_embeddings == 2**20
    assert memory.kv_bytes_per_sequence(G52, 2**20) / 2**30 == pytest.approx(90.46, abs=0.005)


def test_a_shared_indexer_layer_needs_a_full_one_before_it():
    import copy

    from core.hf import model_from_hf_config

    cfg = json.loads((cat.root / "models" / "glm-5.2" / "config.json").read_text())
    bad = copy.deepcopy(cfg)
    bad["indexer_types"][0] = "shared"
    with pytest.raises(ValueError, match="layer 0 must be 'full'"):
        model_from_hf_config(bad, model_id="x")
    bad["indexer_types"] = ["full"] * 5
    with pytest.raises(ValueError, match="'indexer_types' must list 'full' or 'shared' for each of the 78 layers"):
        model_from_hf_config(bad, model_id="x")


def test_glm52_index_keys_only_on_full_indexer_layers():
    cfg = json.loads((cat.root / "models" / "glm-5.2" / "config.json").read_text())
    full = [i for i, t in enumerate(cfg["indexer_types"]) if t == "full"]
    assert full == [0, 1, 2, *range(6, 75, 4)] and len(full) == 21
    # 78 x 1,152 B of latent + 21 x 132 B of index keys = 92,628 B per token (the 57 shared layers reuse the
    # top-2048 of the full layer before them and cache no keys)
    assert memory.kv_bytes_per_token(G52, "bf16") == 78 * 1152 + 21 * 132 == 92_628


# ---- Kimi-K2.6 / K2.7-Code: Kimi-K2.5's shapes, NVIDIA NVFP4 experts

K26, K27 = cat.model("kimi-k2.6"), cat.model("kimi-k2.7-code")


def test_kimi_counts_by_hand():
    # MLA: q 7168 x 1536 + 1536 + 1536 x 64 x 192; kv 7168 x 576 + 512 + 512 x 64 x 256; o 64 x 128 x 7168
    mla = (7168 * 1536 + 1536 + 1536 * 64 * 192) + (7168 * 576 + 512 + 512 * 64 * 256) + 64 * 128 * 7168
    assert mla == 101_124_096
    expert = 3 * 7168 * 2048
    router = 384 * 7168 + 384
    rest = 3 * 7168 * 18432 + 61 * 2 * 7168 + 7168  # dense layer 0 + norms
    total = 61 * mla + 60 * (385 * expert + router) + rest + 2 * 163840 * 7168
    active = 61 * mla + 60 * (9 * expert + router) + rest + 163840 * 7168  # lm_head, no input embedding
    assert (total, active) == (1_026_408_232_448, 31_687_095_808)
    for m in (K26, K27):
        assert params.total_params(m, include_vision=False) == total and params.active_params(m) == active
        # MLA: (512 + 64) x 2 B = 1,152 B per layer, x 61 = 70,272 B per token; no MTP
        assert memory.kv_bytes_per_token(m, "bf16") == 70_272 and m.num_mtp_layers == 0


def test_kimi_vision_tower_apart_and_beside_the_card():
    # MoonViT as for K2.5: 27 blocks of 15,239,504 + patch 678,528 + positions 4,723,200 + final norm 2,304
    # = 416,870,640 (the card's "400M", +4%) + patch merger 54,277,888 = 471,148,528
    tower = 27 * 15_239_504 + 678_528 + 4_723_200 + 2 * 1152
    assert tower == 416_870_640 and tower / 400e6 == pytest.approx(1, abs=0.05)
    assert K26.vision_params == K27.vision_params == tower + 54_277_888


@pytest.mark.parametrize("model_id", ["kimi-k2.6", "kimi-k2.7-code"])
def test_kimi_nvfp4_preset(model_id):
    cfg = json.loads((cat.root / "models" / model_id / "config.json").read_text())
    # ModelOpt NVFP4 (4-bit float, group 16); attention, shared experts, layer 0 and lm_head on the ignore list
    assert cfg["quantization_config"]["quant_algo"] == "NVFP4"
    assert hf_config.quant_preset(cfg) == {"weights": "bf16", "routed_experts": "nvfp4"}


# ---- Nemotron-3-Ultra: the layers_block_type schema (no hybrid_override_pattern, no num_hidden_layers)

ULT = cat.model("nemotron-3-ultra-550b-a55b")


def test_ultra_blocks_become_mixer_layers():
    cfg = json.loads((cat.root / "models" / "nemotron-3-ultra-550b-a55b" / "config.json").read_text())
    assert "hybrid_override_pattern" not in cfg and "num_hidden_layers" not in cfg
    assert len(cfg["layers_block_type"]) == 108  # 48 mamba + 48 moe + 12 attention
    # 60 mixer layers: 48 Mamba-2 + 12 attention; 48 with a MoE block, the 12 Mambas before an attention without
    assert (ULT.num_layers, len(layers_of(ULT, Mamba2)), len(layers_of(ULT, GQA))) == (60, 48, 12)
    assert ULT.num_moe_layers == 48 and len(ULT.ffn_free_layers) == 12
    # "MEMEMEM*E MEMEM*E ...": mixers 4 and 8 are the first attention layers, the Mambas before them FFN-free
    assert layers_of(ULT, GQA)[:2] == [4, 8] and {3, 7} <= set(ULT.ffn_free_layers)


def test_ultra_counts_by_hand():
    # Mamba-2: in_proj 8192 x (2 x 16384 + 2 x 8 x 128 + 256) + conv 18432 x 4 + bias 18432 + 3 x 256
    # + norm 16384 + out_proj 16384 x 8192
    mamba = 8192 * 35072 + 18432 * 4 + 18432 + 3 * 256 + 16384 + 16384 * 8192
    assert groups(ULT, Mamba2)[0].mixer.params(8192) == mamba == 421_636_864
    attn = 8192 * 64 * 128 + 2 * 8192 * 2 * 128 + 64 * 128 * 8192  # 64 q / 2 KV heads x 128, no q/k norms
    assert groups(ULT, GQA)[0].mixer.params(8192) == attn == 138_412_032
    # latent MoE: router 512 x 8192 + bias 512, fc1/fc2 latent 2 x 8192 x 2048 + latent norm 2048,
    # 512 relu2 experts of 2 x 2048 x 5120, a relu2 shared expert 2 x 8192 x 10240
    expert = 2 * 2048 * 5120
    assert params.expert_params(ULT) == expert
    moe_fixed = 512 * 8192 + 512 + 2 * 8192 * 2048 + 2048 + 2 * 8192 * 10240
    norms = 60 * 2 * 8192 + 8192
    total = 48 * mamba + 12 * attn + 48 * (moe_fixed + 512 * expert) + norms + 2 * 131072 * 8192
    assert total == 549_309_190_144 and params.total_params(ULT) == total
    active = 48 * mamba + 12 * attn + 48 * (moe_fixed + 22 * expert) + norms + 131072 * 8192  # top-22, lm_head
    assert active == 54_985_297_920 and params.active_params(ULT) == active


def test_ultra_state_and_cache():
    # state: 256 heads x 64 x 128 x 4 B (fp32) + (16384 + 2 x 8 x 128) conv channels x 3 x 2 B = 8,499,200 B
    state = 256 * 64 * 128 * 4 + 18432 * 3 * 2
    assert groups(ULT, Mamba2)[0].mixer.state_bytes() == state == 8_499_200
    assert memory.linear_state_bytes_per_sequence(ULT) == 48 * state  # 389.1 MiB
    # K/V: 12 attention layers x 2 KV heads x 128 x 2 x 2 B = 12,288 B per token
    assert memory.kv_bytes_per_token(ULT, "bf16") == 12 * 1024
    # 4K: 12,288 x 4,096 + 48 x 8,499,200 = 458,293,248 B = 0.43 GiB; 128K 1.88 GiB; 1M 12.38 GiB
    for tokens, gib in ((4096, 0.427), (131072, 1.880), (1_048_576, 12.380)):
        assert memory.kv_bytes_per_sequence(ULT, tokens) / 2**30 == pytest.approx(gib, abs=0.005)
    assert memory.state_equivalent_tokens(ULT) == pytest.approx(48 * state / 12_288)  # 33,200 tokens


def test_ultra_nvfp4_hf_quant_config_preset():
    # NVIDIA's hf_quant_config.json for the NVFP4 checkpoint (aiconfigurator@095f58a): NVFP4, KV cache FP8,
    # no exclusion list
    q = {"quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8"}}
    assert hf_config.quant_preset(q) == {"weights": "fp8", "routed_experts": "nvfp4"}


def test_layers_block_type_reader_refuses_unknown_blocks():
    cfg = json.loads((cat.root / "models" / "nemotron-3-ultra-550b-a55b" / "config.json").read_text())
    with pytest.raises(ValueError, match="layers_block_type"):
        hf_config.model_from_hf_config({**cfg, "layers_block_type": ["mamba", "linear"]}, model_id="x")
    # the older schema still reads, and an explicit num_hidden_layers is left alone
    pattern = "".join({"mamba": "M", "attention": "*", "moe": "E"}[b] for b in cfg["layers_block_type"])
    old = {k: v for k, v in cfg.items() if k != "layers_block_type"}
    m = hf_config.model_from_hf_config(
        {**old, "hybrid_override_pattern": pattern, "num_hidden_layers": 108}, model_id="x"
    )
    assert params.total_params(m) == params.total_params(ULT)


# ---- every new model renders on Home and Fit (AppTest, one scenario each)

SCENARIOS = {
    "qwen3.8-2.4t-a95b": dict(gpu="b200", nodes="4", gpn="8", w="fp8"),
    "qwen3.6-35b-a3b": dict(gpu="h100-sxm", nodes="1", gpn="1", w="fp8", ex="nvfp4"),
    "glm-5.2": dict(gpu="b200", nodes="2", gpn="8", w="fp8"),
    "kimi-k2.6": dict(gpu="b200", nodes="1", gpn="8", w="bf16", ex="nvfp4"),
    "kimi-k2.7-code": dict(gpu="b200", nodes="2", gpn="8", w="fp8"),
    "nemotron-3-ultra-550b-a55b": dict(gpu="b200", nodes="2", gpn="8", w="fp8"),
}


@pytest.mark.parametrize("page", ["app.py", "pages/1_Fit.py"])
@pytest.mark.parametrize("model_id", NEW)
def test_renders_on_home_and_fit(model_id, page):
    import streamlit as st
    from streamlit import config

    from tests.page._util import run_page

    st.cache_data.clear()
    st.cache_resource.clear()
    config.set_option("client.showErrorDetails", "full")
    at = run_page(page, timeout=90, model=model_id, **SCENARIOS[model_id])
    if page == "app.py":  # Home's header names the model
        assert any(m.value.startswith(f"**{cat.model(model_id).name}** on") for m in at.markdown)
    else:  # every scenario above leaves tens of GB of headroom per GPU (Qwen3.8 FP8 on 32 B200s: 88 GB of weights)
        assert at.success and at.success[0].value.startswith("**Fits.**")
