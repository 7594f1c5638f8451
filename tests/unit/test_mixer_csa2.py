"""DeepSeek-V4.1-Flash's CSA2 attention, added as one mixer file (core/model/mixers/csa2.py), one reader file
(core/hf/deepseek_v41.py) and this test (issue 17: a new mixer kind touches nothing else).

The config is DeepSeek-V4.1-Flash's released config.json (Hugging Face deepseek-ai/DeepSeek-V4.1-Flash,
as quoted verbatim in public reader code, trimmed to the fields a planner reads; the Engram, DSpark and
vision fields are left out because the reader does not model them yet). Published figures (arXiv
2609.19969): 552B backbone parameters; 890 B per token of global KV with the FP4 cache, about a quarter of
V4-Flash's. Every other expected value below is worked by hand in its comment."""

import json

import numpy as np
import pytest

from core import memory, moe, perf
from core.catalog import load_catalog
from core.deployment.bundle import Deployment
from core.deployment.specs import ParallelLayout, Precision
from core.hardware.efficiency import IDEAL
from core.hf import SUPPORTED_MODEL_TYPES, model_from_config_text, model_from_hf_config
from core.model import ModelSpec, params
from core.model.mixers import MIXER_KINDS

TEXT = {
    "model_type": "deepseek_v41_text",
    "vocab_size": 129280,
    "hidden_size": 5120,
    "moe_intermediate_size": 2304,
    "num_hidden_layers": 40,
    "num_attention_heads": 64,
    "num_key_value_heads": 1,
    "head_dim": 512,
    "qk_rope_head_dim": 64,
    "q_lora_rank": 1280,
    "o_lora_rank": 1024,
    "o_groups": 8,
    "tie_word_embeddings": False,
    "max_position_embeddings": 1048576,
    "n_routed_experts": 384,
    "n_shared_experts": 1,
    "num_experts_per_tok": 6,
    "scoring_func": "sqrtsoftplus",
    "topk_method": "noaux_tc",
    "routed_scaling_factor": 1.5,
    "sliding_window": 128,
    "compress_ratios": [0, 0] + [2] * 18 + [1] * 20 + [0, 0, 0],
    "kv_source_layer_ids": [2, 8, 14, 20],
    "index_source_layer_ids": [2, 8, 14, 20, 24, 28, 32, 36],
    "index_n_heads": 32,
    "index_head_dim": 128,
    "index_topk": 512,
    "candidate_source_layer_id": 20,
    "candidate_topk_blocks": 2048,
    "candidate_block_size": 8,
    "hc_mult": 4,
    "num_nextn_predict_layers": 3,
}
CONFIG = {
    "architectures": ["DeepseekV41ForCausalLM"],
    "model_type": "deepseek_v41",
    "quantization_config": {
        "quant_method": "fp8",
        "activation_scheme": "dynamic",
        "weight_block_size": [32, 32],
        "scale_fmt": "ue8m0",
        "expert_dtype": "fp4",
    },
    "text_config": TEXT,
}
CTX = 131072
H200 = load_catalog().gpu("h200")


def v41(**text) -> ModelSpec:
    return model_from_hf_config({**CONFIG, "text_config": {**TEXT, **text}}, model_id="deepseek-v4.1-flash")


M = v41()
EXAMPLES = [M]  # the fuzz test builds hostile CSA2 layers from these (no catalog model uses the kind yet)


def test_registered_by_existing():
    assert "dsv41_csa2" in MIXER_KINDS and "deepseek_v41" in SUPPORTED_MODEL_TYPES
    # the pydantic union picks the kind up: a spec survives a JSON round trip
    assert ModelSpec.model_validate_json(M.model_dump_json()) == M
    # a pasted config goes through the same reader
    pasted, _ = model_from_config_text(json.dumps(CONFIG))
    assert pasted.mixers == M.mixers


def test_layer_roles():
    # layers 0-1 window only; 2, 8, 14 (ratio 2) and 20 (ratio 1) write the shared caches; 24, 28, 32, 36
    # re-index layer 20's cache over its candidates; the other 30 reuse the last top-k
    roles = {}
    for g in M.mixers:
        roles.setdefault(g.mixer.label(), []).extend(g.layers)
    assert sorted(roles["sliding window 128"]) == [0, 1]
    assert sorted(roles["CSA2 1/2 KV source + window 128"]) == [2, 8, 14]
    assert roles["CSA2 1/1 KV source + window 128"] == [20]
    assert sorted(roles["CSA2 1/1 re-index + window 128"]) == [24, 28, 32, 36]
    reuse = [i for i in range(40) if i not in (0, 1, 2, 8, 14, 20, 24, 28, 32, 36)]
    assert sorted(roles["CSA2 1/2 reuse + window 128"] + roles["CSA2 1/1 reuse + window 128"]) == reuse
    assert M.checkpoint_precision == {"weights": "fp8", "routed_experts": "mxfp4"}


def test_parameters_match_the_published_backbone():
    # per layer: wq_a 5120 x 1280 + 1280 + wq_b 1280 x 64 x 512 + wkv 5120 x 512 + 512 + wo_a 64 x 512 x 1024
    # + wo_b 8 x 1024 x 5120 + 64 sinks = 126,617,408; a ratio-2 source adds a compressor (wkv, wgate 2 x
    # 5120 x 512, ape 2 x 512, norm 512) and index keys (512 x 128): 5,309,952; the ratio-1 source
    # 2,687,488; each of the 8 index sources an indexer (1280 x 32 x 128 + 5120 x 32): 5,406,720.
    # attention 5,126,567,424; routed experts 40 x 384 x 3 x 5120 x 2304 = 543,581,798,400; shared
    # 1,415,577,600; embeddings + head 2 x 129,280 x 5120 = 1,323,827,200; routers 40 x 384 x 5121 =
    # 78,658,560; hyper-connections 40 x 2 x (6 x 16 x 5120 + 24 + 3) + (16 x 5120 + 5) = 39,405,845
    # -> 551,566,249,589, the published 552B backbone (Engram, DSpark and vision apart)
    assert params.breakdown(M).attention == 5_126_567_424
    assert params.total_params(M) == 551_566_249_589
    assert params.total_params(M) == pytest.approx(552e9, rel=0.01)


def test_cache_counts_each_shared_cache_once():
    # 3 ratio-2 sources x (584 + 68) / 2 + 1 ratio-1 source x (584 + 68) = 1,630 B per token
    assert memory.kv_bytes_per_token(M) == 1630.0
    # at 128K: 1,630 x 131,072 + 40 layers x 128 window entries x 584 B + 3 compressor states of
    # 2 x 2 x 512 x 4 B = 213,647,360 + 2,990,080 + 24,576
    assert memory.kv_bytes_per_sequence(M, CTX) == 216_662_016
    parts = memory.cache_by_layer_type(M, CTX)
    assert parts["sliding window (last 128 entries)"] == 2_990_080
    assert parts["CSA2 index keys"] == 68 * (3 * 65536 + 131072)
    # the paper's FP4 cache: 512 FP4 values + one byte of scale per 16 = 288 B entries, 68 B keys:
    # 2.5 entries per token x 356 B = the published 890 B per token, ~1/4 of V4-Flash's 3,514
    fp4 = sum(
        len(g.layers) * g.mixer.model_copy(update={"entry_bytes": 288}).cache_bytes_per_token("bf16") for g in M.mixers
    )
    assert fp4 == 890.0
    flash = memory.kv_bytes_per_token(load_catalog().model("deepseek-v4-flash"))
    assert flash == pytest.approx(3514, abs=1) and fp4 / flash == pytest.approx(0.25, abs=0.01)


def test_decode_reads_the_topk_of_each_shared_cache():
    # one sequence at 128K: every layer reads its 128 window entries (40 x 128 x 584 = 2,990,080); the 38
    # layers with a ratio read 512 top-k entries (38 x 512 x 584 = 11,362,304); the indexers scan keys:
    # sources 2, 8, 14 all 65,536 of theirs, layer 20 all 131,072, layers 24-36 the 2,048 x 8 = 16,384
    # candidates: 68 x (3 x 65,536 + 131,072 + 4 x 16,384) = 26,738,688; the ratio-2 compressors read their
    # 8,192 B state once per 2 tokens: 3 x 4,096 = 12,288
    expected = 2_990_080 + 11_362_304 + 26_738_688 + 12_288
    assert memory.decode_read_bytes_per_sequence(M, CTX) == expected
    # the step-time model sums the same layers: its roofline adds the compressor state writes (3 x 2 x 512 x 4)
    step = moe.decode_step(Deployment(M, H200, ParallelLayout(), "fp8"), 1, CTX)
    assert step.kv_bytes[0] == pytest.approx(expected + 3 * 4096)


def test_score_flops():
    # decode at 128K, TP 1, per layer: 64 heads x 4 x 512 per attended entry; a reuse layer attends 128 + 512
    # entries; the re-index layer adds 2 x 32 x 128 per scanned candidate (16,384)
    costs = {g.mixer.label(): g.mixer for g in M.mixers}
    reuse, reindex = costs["CSA2 1/1 reuse + window 128"], costs["CSA2 1/1 re-index + window 128"]
    assert reuse.score_flops_per_token(CTX, 1, "decode") == 131072 * 640
    assert reindex.score_flops_per_token(CTX, 1, "decode") == 131072 * 640 + 8192 * 16384
    # prefill of 4,096 tokens, mean per token: min(p, 128) averages (128^2 / 2 + 128 x 3,968) / 4,096 = 126,
    # min(p / 2, 512) averages (512^2 / 2 + 512 x 1,536) / 2,048 = 448
    reuse2 = costs["CSA2 1/2 reuse + window 128"]
    assert reuse2.score_flops_per_token(4096, 1, "prefill") == pytest.approx(131072 * (126 + 448))
    # the prefill mean is the mean of the decode counts over the prompt's positions (a brute-force sum)
    for mixer in (reuse2, reindex, costs["CSA2 1/2 KV source + window 128"]):
        ctx = 40000
        brute = np.mean([mixer.score_flops_per_token(p, 1, "decode") for p in range(1, ctx + 1)])
        assert mixer.score_flops_per_token(ctx, 1, "prefill") == pytest.approx(brute, rel=2e-3)


def test_step_time_and_bounds_run_on_it():
    # 8 x H200, attention DP x EP8, 64 sequences at 32K: the step-time model and the Intensity roofline
    # read the same cache bytes per GPU (8 sequences per GPU x the per-sequence read at 32K)
    layout = ParallelLayout(attention_dp=8, ep=8)
    roof = perf.decode_roofline(
        Deployment(M, H200, layout, Precision(weights="fp8", routed_experts="mxfp4")), 64, 32768
    )
    per_seq = memory.decode_read_bytes_per_sequence(M, 32768) + 3 * 4096  # + compressor state writes
    assert roof.cache_bytes == pytest.approx(8 * per_seq)
    cfg = perf.StepConfig("decode", 64, 32768)
    st = perf.step_time(Deployment(M, H200, layout, Precision(weights="fp8", routed_experts="mxfp4"), IDEAL), cfg)
    assert 0 < roof.step_s <= st.step_s


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ({"kv_source_layer_ids": [8, 14, 20]}, "layer 2 has compress ratio 2 but no KV source"),
        ({"compress_ratios": [0, 0, 2, 2, 2, 4] + [2] * 14 + [1] * 20}, r"layer 5 \(ratio 4\) reads KV source layer 2"),
        ({"kv_source_layer_ids": [0, 2, 8, 14, 20]}, "names layer 0, which is not a compressed layer"),
        ({"index_source_layer_ids": [8, 14, 20]}, "must also be in index_source_layer_ids"),
        ({"candidate_topk_blocks": 4}, "below index_topk"),
        ({"compress_ratios": [0, 2]}, "compress_ratios' needs 40"),
    ],
)
def test_bad_layouts_say_which_layer(text, message):
    with pytest.raises(ValueError, match=message):
        v41(**text)


def test_pages_render_a_pasted_v41_config():
    # what a user sees after pasting the config: Home shows the hand totals above (551.6B -> "552B", 1,630 B
    # per token -> "1.63 KB") and the pages that sum over layers render it without an exception or error
    from core.hf import encode_config
    from tests.page._util import metrics, run_page

    spec, norm = model_from_config_text(json.dumps(CONFIG), name="DeepSeek-V4.1-Flash")
    query = {"model": spec.id, "cfg": encode_config(norm), "gpu": "h200"}
    home = metrics(run_page("app.py", **query))
    assert home["Total parameters"] == "552B" and home["KV cache per token (bf16)"] == "1.63 KB"
    for page in ("pages/1_Fit.py", "pages/2_Intensity.py", "pages/4_Speculative.py", "pages/5_Layouts.py"):
        at = run_page(page, timeout=300, **query)
        assert not at.error, (page, [e.value for e in at.error])
