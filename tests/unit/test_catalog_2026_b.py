"""Late-2026 catalog models with new readers (issue 22): Tencent Hy3 (hy_v3), MiniMax-M2.5 / M2.7 (minimax_m2),
MiMo-V2.5-Pro (mimo_v2: full + sliding GQA with q/k head 192, v head 128), Step-3.7-Flash (step3p7: global +
sliding GQA with different query-head counts). Totals, caches and MTP sizes are computed by hand below; the
published figures are the vendors' (model.yaml cites each)."""

import json
from pathlib import Path

import pytest

from core import hf as hf_config
from core import memory
from core.catalog import load_catalog
from core.model import params
from core.model.mixers.gqa import GQA
from tests.page._util import run_page
from tests.unit._layers import groups

cat = load_catalog()
MODELS = Path(__file__).resolve().parents[2] / "catalogs" / "models"
NEW = ["hy3", "minimax-m2.5", "minimax-m2.7", "mimo-v2.5-pro", "step-3.7-flash"]


def config(model_id: str) -> dict:
    return json.loads((MODELS / model_id / "config.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "model_id,total,active",
    [
        ("hy3", 295e9, 21e9),  # Hy3 README: 295B / 21B (with embedding and head)
        ("minimax-m2.5", 230e9, 10e9),  # MiniMax: 230B / 10B (non-embedding)
        ("minimax-m2.7", 230e9, 10e9),
        ("mimo-v2.5-pro", 1020e9, 42e9),  # Xiaomi: 1.02T / 42B (without the input embedding)
        ("step-3.7-flash", 196e9, 11e9),  # StepFun: 196B language backbone (198B with the vision encoder) / 11B
    ],
)
def test_published_counts_within_3_percent(model_id, total, active):
    m = cat.model(model_id)
    assert params.total_params(m, include_vision=False) == pytest.approx(total, rel=0.03)
    assert params.active_params(m) == pytest.approx(active, rel=0.03)


def test_hy3_total_and_active_by_hand():
    # embeddings 2 x 120832 x 4096; attention per layer 4096 x (64x128 q + 64x128 o + 2 x 8x128 k, v) + q/k norms 256;
    # layer 0 dense 3 x 4096 x 13312; 79 MoE layers: 192 + 1 shared experts of 3 x 4096 x 1536, router 192 x 4096 + 192
    expert = 3 * 4096 * 1536  # 18,874,368
    attention = 4096 * (8192 + 8192 + 2048) + 256  # 75,497,728
    moe = 192 * expert + expert + 192 * 4096 + 192
    total = 2 * 120832 * 4096 + 80 * attention + 3 * 4096 * 13312 + 79 * moe + (80 * 2 + 1) * 4096
    assert total == 295_033_543_488  # +0.01% of 295B
    m = cat.model("hy3")
    assert params.total_params(m) == total
    # active: both tables, all attention, the dense layer, 8 routed + the shared expert and the router per MoE layer
    active = 2 * 120832 * 4096 + 80 * attention + 3 * 4096 * 13312 + 79 * (9 * expert + 192 * 4096 + 192) + 161 * 4096
    assert active == 20_675_730_240  # -1.5% of 21B
    assert params.active_params(m) == active
    # without the input embedding 20.18B (-3.9%), non-embedding 19.69B (-6.3%): Tencent counts both tables
    assert params.active_params(m, "excl_input_embedding") == active - 120832 * 4096


def test_hy3_mtp_layer_is_the_published_3_8b():
    # DeepSeek-style MTP: 2 input norms + eh_proj 2h x h + one MoE layer (attention, experts, 2 norms) + head norm
    h = 4096
    layer = 75_497_728 + 193 * 3 * h * 1536 + 192 * h + 192 + 2 * h
    mtp = 2 * h + 2 * h * h + layer + h
    assert mtp == 3_752_612_288  # README: 3.8B MTP layer parameters (-1.2%)
    assert params.mtp_params(cat.model("hy3")) == mtp
    assert cat.model("hy3").num_mtp_layers == 1


def test_minimax_m2_total_and_non_embedding_active_by_hand():
    # attention 3072 x (48x128 x 2 + 8x128 x 2) + q/k norms 256; 256 experts of 3 x 3072 x 1536; router + bias
    attention = 3072 * (12288 + 2048) + 256
    expert = 3 * 3072 * 1536
    total = 2 * 200064 * 3072 + 62 * (attention + 256 * expert + 256 * 3072 + 256) + (62 * 2 + 1) * 3072
    assert total == 228_689_336_320  # -0.57% of 230B
    active = 62 * (attention + 8 * expert + 256 * 3072 + 256) + (62 * 2 + 1) * 3072
    assert active == 9_800_931_328  # -2.0% of 10B (MiniMax's 9.8B)
    for model_id in ("minimax-m2.5", "minimax-m2.7"):
        m = cat.model(model_id)
        assert params.total_params(m) == total and params.active_params(m) == active
        assert m.moe.n_shared_experts == 0 and m.dense_layers == () and m.num_mtp_layers == 0


def test_mimo_total_reconciles_with_the_checkpoint_inventory():
    h = 6144
    attention = h * (128 * 192 + 128 * 128 + 8 * 192 + 8 * 128)  # q, o, k, v: 267,386,880
    sliding = attention + 128  # + one sink per head
    dense = 3 * h * 16384
    moe = 384 * 3 * h * 2048 + 384 * h + 384
    total = 2 * 152576 * h + 10 * attention + 60 * sliding + dense + 69 * moe + (70 * 2 + 1) * h
    assert total == 1_021_248_126_336
    assert params.total_params(cat.model("mimo-v2.5-pro")) == total
    # The published checkpoint holds 1,023,244,718,976 elements (safetensors inventory): this model + 3 MTP layers
    # (sliding attention, dense FFN, eh_proj 2h x h, 5 norms) + the FP32 block scales of the FP8 weights
    mtp = 3 * (sliding + dense + 2 * h * h + 5 * h)
    scales = 73 * 216 * 48 + 12 * 48 * 128 + 69 * 384 * 3 * 48 * 16
    assert total + mtp + scales == 1_023_244_718_976
    # the reader declares those 3 MTP layers (config.json does not list them), dense, sliding: the MTP draft
    m = cat.model("mimo-v2.5-pro")
    assert (m.num_mtp_layers, m.mtp_dense_ffn) == (3, True) and params.mtp_params(m) == mtp == 1_934_715_264


def test_mimo_layers_and_convention():
    m = cat.model("mimo-v2.5-pro")
    full, swa = groups(m, GQA)
    assert full.layers == (0, 7, 15, 23, 31, 39, 47, 55, 62, 69)  # hybrid_layer_pattern zeros
    assert swa.mixer.sliding_window == 128 and swa.mixer.sinks and not full.mixer.sinks
    assert (full.mixer.head_dim, full.mixer.dv, full.mixer.num_kv_heads) == (192, 128, 8)
    assert m.dense_layers == (0,) and m.moe.n_shared_experts == 0 and m.moe.router_bias
    # active without the input embedding: 40.96B (-2.5%); with it 41.90B (-0.25%)
    assert params.active_params(m) / 1e9 == pytest.approx(40.957, abs=0.001)
    assert params.active_params(m, "incl_embedding_and_head") - params.active_params(m) == 152576 * 6144


def test_step_layers_and_counts_by_hand():
    m = cat.model("step-3.7-flash")
    full, swa = groups(m, GQA)
    assert full.layers == tuple(range(0, 45, 4)) and len(swa.layers) == 33  # 12 global, 33 sliding
    assert (full.mixer.num_heads, swa.mixer.num_heads, swa.mixer.num_kv_heads) == (64, 96, 8)
    assert swa.mixer.sliding_window == 512 and swa.mixer.chunk is None
    assert m.dense_layers == (0, 1, 2) and m.moe.n_shared_experts == 1
    global_attention = 4096 * (64 * 128 * 2 + 8 * 128 * 2) + 256
    sliding_attention = 4096 * (96 * 128 * 2 + 8 * 128 * 2) + 256
    expert = 3 * 4096 * 1280
    moe = 289 * expert + 288 * 4096 + 288
    non_expert = 12 * global_attention + 33 * sliding_attention + 3 * 3 * 4096 * 11264 + (45 * 2 + 1) * 4096
    total = 2 * 128896 * 4096 + non_expert + 42 * moe
    assert total == 196_940_008_512  # +0.48% of the 196B backbone
    assert params.total_params(m) == total
    active = non_expert + 42 * (9 * expert + 288 * 4096 + 288)
    assert active == 10_915_286_080  # non-embedding: -0.8% of 11B
    assert params.active_params(m) == active
    # 3 MTP layers (num_nextn_predict_layers; layer_types[45] = sliding): each the sliding attention, a dense
    # SwiGLU of 11264, eh_proj 2h x h, 2 input norms + 2 layer norms + the shared head's norm: 281,039,104
    assert (m.num_mtp_layers, m.mtp_dense_ffn, m.head_mixer) == (3, True, swa.mixer)
    assert params.mtp_params(m) == 3 * (sliding_attention + 3 * 4096 * 11264 + 2 * 4096 * 4096 + 5 * 4096)
    assert params.mtp_params(m) == 843_117_312


@pytest.mark.parametrize(("model_id", "per_layer"), [("step-3.7-flash", 281_039_104), ("mimo-v2.5-pro", 644_905_088)])
def test_dense_mtp_weights_on_a_gpu(model_id, per_layer):
    # a dense MTP FFN has no routed experts: EP 8 x attention TP 1 holds every MTP weight on each GPU (fp8: 1 B per
    # weight + the block scales of the fp8 matrices; the norms stay bf16): between 1 and 1.02 B per parameter
    from core.deployment.specs import ParallelLayout, Precision
    from core.memory.weights import mtp_bytes_per_rank

    m = cat.model(model_id)
    assert params.mtp_routed_expert_params(m) == 0
    on_gpu = mtp_bytes_per_rank(m, ParallelLayout(attention_dp=8, ep=8), Precision.of("fp8"), 0)
    assert 3 * per_layer <= on_gpu <= 1.02 * 3 * per_layer


def test_kv_bytes_per_token():
    # Hy3: 2 x 8 KV heads x 128 x 2 B = 4,096 B per layer, x 80 = 327,680 B
    assert memory.kv_bytes_per_token(cat.model("hy3"), "bf16") == 327_680
    # MiniMax-M2.x: 4,096 B per layer x 62 = 253,952 B
    assert memory.kv_bytes_per_token(cat.model("minimax-m2.5"), "bf16") == 253_952
    assert memory.kv_bytes_per_token(cat.model("minimax-m2.7"), "fp8") == 253_952 / 2
    # MiMo: 8 x (192 + 128) x 2 B = 5,120 B per layer, x 70 = 358,400 B (below the 128-token window)
    assert memory.kv_bytes_per_token(cat.model("mimo-v2.5-pro"), "bf16") == 358_400
    # Step: 4,096 B per layer x 45 = 184,320 B (below the 512-token window)
    assert memory.kv_bytes_per_token(cat.model("step-3.7-flash"), "bf16") == 184_320


@pytest.mark.parametrize(
    "model_id,full_layers,swa_layers,bytes_per_layer,window",
    [("mimo-v2.5-pro", 10, 60, 5120, 128), ("step-3.7-flash", 12, 33, 4096, 512)],
)
def test_sliding_layers_cap_the_cache(model_id, full_layers, swa_layers, bytes_per_layer, window):
    # at 32K: the full layers keep 32,768 tokens, the sliding ones their window
    # MiMo: 10 x 5,120 x 32,768 + 60 x 5,120 x 128 = 1,717,043,200 B; Step: 12 x 4,096 x 32,768 + 33 x 4,096 x 512
    m = cat.model(model_id)
    expected = full_layers * bytes_per_layer * 32768 + swa_layers * bytes_per_layer * window
    assert memory.kv_bytes_per_sequence(m, 32768, "bf16") == expected


@pytest.mark.parametrize(
    "model_id,edit,field",
    [
        ("hy3", {"num_experts": "many"}, "num_experts"),
        ("hy3", {"mlp_layer_types": ["dense", "moe"]}, "mlp_layer_types"),
        ("hy3", {"first_k_dense_replace": 80}, "first_k_dense_replace"),
        ("minimax-m2.7", {"attn_type_list": [0] * 62}, "attn_type_list"),
        ("minimax-m2.5", {"num_local_experts": 0}, "num_local_experts"),
        ("mimo-v2.5-pro", {"hybrid_layer_pattern": [0, 1]}, "hybrid_layer_pattern"),
        ("mimo-v2.5-pro", {"swa_num_key_value_heads": 7}, "swa_num_key_value_heads"),
        ("mimo-v2.5-pro", {"moe_layer_freq": [0] * 70}, "moe_layer_freq"),
        ("step-3.7-flash", {"moe_layers_enum": "3,x"}, "moe_layers_enum"),
        ("step-3.7-flash", {"moe_layers_enum": "3,45"}, "moe_layers_enum"),
        ("step-3.7-flash", {"layer_types": ["full_attention", "linear_attention"]}, "layer_types"),
        ("step-3.7-flash", {"moe_top_k": 8.5}, "moe_top_k"),
        (
            "step-3.7-flash",
            {"attention_other_setting": {"num_attention_heads": 96, "num_attention_groups": 7}},
            r"attention_other_setting.*num_attention_groups \(7\)",
        ),
    ],
)
def test_malformed_field_is_named(model_id, edit, field):
    cfg = config(model_id)
    (cfg.get("text_config") or cfg).update(edit)
    with pytest.raises(ValueError, match=field):
        hf_config.model_from_hf_config(cfg, model_id="x")


def test_step_reads_a_flat_copy_and_the_published_schema_alike():
    # aiconfigurator's flattened copy: top-level fields, num_key_value_heads, num_experts, first_k_dense_replace
    text = config("step-3.7-flash")["text_config"]
    flat = {k: v for k, v in text.items() if k not in ("moe_layers_enum", "moe_num_experts", "moe_top_k")}
    flat.update(architectures=["Step3p7FlashForCausalLM"], num_experts=288, num_experts_per_tok=8)
    flat.update(first_k_dense_replace=3, num_key_value_heads=flat.pop("num_attention_groups"))
    flat.pop("model_type")
    m = hf_config.model_from_hf_config(flat, model_id="x")
    ref = cat.model("step-3.7-flash")
    assert params.total_params(m) == params.total_params(ref) and m.dense_layers == ref.dense_layers


@pytest.mark.parametrize("model_id", NEW)
@pytest.mark.parametrize("page", ["app.py", "pages/1_Fit.py"])
def test_renders_on_home_and_fit(model_id, page):
    at = run_page(page, timeout=120, model=model_id, gpu="b200", nodes="2", gpn="8", w="fp8")
    assert not at.error, [e.value for e in at.error]
    if page == "pages/1_Fit.py":
        # 16 x B200 (172.4 GB usable each) hold each of these in FP8: the largest, MiMo-V2.5-Pro (1,021.3B parameters,
        # ~1.02 TB), needs ~64 GB of weights per GPU: the verdict is "Fits", not a "Does not fit" error
        assert [s.value[:9] for s in at.success] == ["**Fits.**"]
    assert any(cat.model(model_id).name in md.value for md in at.markdown) or at.metric
