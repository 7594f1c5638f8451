"""One decode-step model (issue 17, item 4): the Intensity bounds and the Speculative batch curves are the
step-time model's per-layer works with every efficiency at 1. Hand values from the numbers audit
(../shared/reviews/numbers-audit.md) and the design review; each was wrong before this change."""

import numpy as np
import pytest

from core import moe, perf
from core.catalog import load_catalog
from core.deployment.bundle import Deployment
from core.deployment.parallel import default_layout
from core.deployment.specs import ParallelLayout, Precision
from core.hardware.efficiency import IDEAL
from core.perf import kernels

cat = load_catalog()
H200, H100, GB200 = cat.gpu("h200"), cat.gpu("h100-sxm"), cat.gpu("gb200")
FP8 = 1 + 4 / 16384  # bytes per FP8 weight with one fp32 scale per 128 x 128 block


def test_sparse_attention_bound_reads_the_topk_not_the_cache():
    # GLM-5 at 128K, one sequence on one GPU: 78 layers x (2,048 top-k tokens x 1,152 B + 131,072 index keys
    # x 132 B) = 1.5335 GB, not the 13.1 GB it stores (the old bound charged every cached token)
    glm = cat.model("glm-5")
    step = moe.decode_step(Deployment(glm, H200, ParallelLayout(), "fp8"), 1, 131072)
    assert step.kv_bytes[0] == pytest.approx(78 * (2048 * 1152 + 131072 * 132))


def test_linear_layers_score_nothing_and_move_their_state():
    # Qwen3.5-397B, one sequence on one GPU at 4,096 tokens: 15 full layers read 2 KV heads x 256 x 2 x 2 B x
    # 4,096 tokens each; the 45 Gated DeltaNet layers read and write their 4,268,032 B state
    q = cat.model("qwen3.5-397b-a17b")
    step = moe.decode_step(Deployment(q, H200, ParallelLayout(), "bf16"), 1, 4096)
    assert step.kv_bytes[0] == pytest.approx(15 * 2048 * 4096 + 2 * 45 * 4_268_032)
    # scores: only the 15 softmax layers, 32 heads x 2 (256 + 256) per cached token
    costs = kernels.layer_costs(
        Deployment(q, H200, ParallelLayout(), Precision(weights="bf16"), IDEAL), perf.StepConfig("decode", 1.0, 4096)
    )
    by = {type(g.mixer).__name__: costs.mixer[i]["attention_scores"].flops for i, g in enumerate(q.mixers)}
    assert by == {"GatedDeltaNet": 0.0, "GQA": 32 * 2 * 512 * 4096}


def test_tied_lm_head_is_read():
    # Gemma-4-26B-A4B on one H100 at batch 1: the tied 262,144 x 2,816 table is read as the LM head,
    # 1.48 GB more than the 6.17 GB the old bound read (audit W6)
    g4 = cat.model("gemma-4-26b-a4b")
    step = moe.decode_step(Deployment(g4, H100, ParallelLayout(), "bf16"), 1, 1)
    assert step.weight_bytes[0] == pytest.approx(6.17e9 + 262_144 * 2_816 * 2, rel=0.01)


def test_attention_scores_run_at_the_bf16_peak_over_an_fp8_model():
    # DeepSeek-V3 FP8 on 8 x H200 (TP8), 64 decode tokens at 2,304: absorbed MLA scores 16 heads per rank x
    # 2 (576 + 512) per cached token, at 989 TFLOPS (bf16), not the 1,979 of FP8 (audit M11)
    m = cat.model("deepseek-v3")
    costs = kernels.layer_costs(
        Deployment(m, H200, ParallelLayout(attention_tp=8, ep=8), Precision(weights="fp8"), IDEAL),
        perf.StepConfig("decode", 8.0, 2304),
    )
    w = costs.mixer[0]["attention_scores"]
    assert w.flops == pytest.approx(64 * 16 * 2 * (576 + 512) * 2304)
    assert w.peak_flops == pytest.approx(989.4e12, rel=0.001)


def test_default_scenario_bound_by_hand():
    # DeepSeek-V3 FP8 on 8 x H200, TP8 x EP8, 64 sequences at 2,304 tokens (audit S1): weights read per GPU
    # 81.7586 GB routed x (1 - (1 - 8/256)^64) + 3.1499 GB the rest = 74.19 GB; KV 64 x 2,304 x 70,272 B =
    # 10.36 GB; (74.19 + 10.36) GB / 4.8 TB/s = 17.62 ms
    m = cat.model("deepseek-v3")
    step = moe.decode_step(Deployment(m, H200, default_layout(m, 8, 8), "fp8"), 64, 2304)
    assert step.weight_bytes[0] / 1e9 == pytest.approx(81.7586 * (1 - (248 / 256) ** 64) + 3.1499, abs=0.005)
    assert step.kv_bytes[0] == pytest.approx(64 * 2304 * 70_272)
    assert step.time_s[0] * 1e3 == pytest.approx(17.61, abs=0.02)
    assert step.memory_bound[0]


def test_pipeline_bound_is_the_busiest_stage_with_microbatches_in_flight():
    # Kimi K2 FP8 on a GB200 NVL72 rack at its default TP4 x PP18 (audit W1), 64 sequences at 2,304 tokens.
    # 18 micro-batches of 64 / 18 = 3.556 sequences; the last stage (3 MoE layers + the LM head) is the busiest.
    # Per MoE layer per GPU: attention 15,140,864 replicated + 85,983,232 / 4 params in FP8, two bf16 norms,
    # 96 local experts x 44,040,192 params x (1 - (1 - 8/384)^3.556) = 7.21% touched, a quarter of the shared
    # expert, the bf16 router (384 x 7,168 + 384): 0.35819 GB; LM head 163,840 x 7,168 / 4 x 2 B + the final norm
    # = 0.58722 GB; KV 3.556 x 2,304 x 1,152 B x 3 layers = 28.3 MB: 1.6901 GB per micro-batch pass = 0.21126 ms
    # at 8 TB/s; 18 x 0.21126 ms per token step: 64 / 3.803 ms = 16,830 tokens/s per 72-GPU replica, 7 x the
    # old 2,534 that walked one batch through the stages and called 191.7 GB "per GPU"
    k2 = cat.model("kimi-k2")
    lay = default_layout(k2, 72, 4)
    assert (lay.attention_tp, lay.pp) == (4, 18)
    step = moe.decode_step(Deployment(k2, GB200, lay, Precision(weights="fp8", kv_cache="bf16")), 64, 2304)
    assert step.microbatches[0] == 18 and step.stage[0] == 17
    assert (step.weight_bytes[0] + step.kv_bytes[0]) / 1e9 == pytest.approx(1.6901, rel=1e-4)
    assert step.kv_bytes[0] == pytest.approx(64 / 18 * 2304 * 1152 * 3)
    assert step.time_s[0] * 1e3 == pytest.approx(18 * 0.21126, rel=1e-3)
    assert step.tokens_per_s[0] == pytest.approx(16_830, rel=1e-3)


def test_fewer_sequences_than_stages_leave_bubbles():
    # 4 sequences on 18 stages: 4 micro-batches of one sequence, each crossing all 18 stages in turn; a
    # sequence waits the sum of the stage times, not 4 x the busiest
    k2 = cat.model("kimi-k2")
    lay = default_layout(k2, 72, 4)
    step = moe.decode_step(Deployment(k2, GB200, lay, "fp8"), 4, 2304)
    assert step.microbatches[0] == 4
    r = perf.decode_roofline(Deployment(k2, GB200, lay, "fp8"), 4, 2304)
    assert r.step_s > 4 * r.stage_s and step.time_s[0] == pytest.approx(r.step_s)


@pytest.mark.parametrize("model_id", sorted(cat.models))
def test_intensity_and_speculative_use_the_step_time_models_works(model_id):
    """For every catalog model, the roofline bound is the step-time model with every factor at 1 and no
    communication: its kernel seconds equal step_time's compute under the IDEAL profile (one GPU, so there is
    no communication), and the Speculative page's verification step costs more than a plain one. Its cache reads
    are the plain step's, except a sparse layer's top-k rows, which each of the 64 - 16 = 48 extra query tokens
    gathers again (GLM-5 at 4,096 tokens: 2,048 latents a layer per extra token; DeepSeek-V3: none)."""
    m = cat.model(model_id)
    lay = ParallelLayout()
    ideal = perf.step_time(Deployment(m, H200, lay, "bf16", IDEAL), perf.StepConfig("decode", 16.0, 4096))
    bound = moe.decode_step(Deployment(m, H200, lay, "bf16"), 16, 4096)
    assert ideal.comm_s == 0
    assert bound.time_s[0] == pytest.approx(ideal.step_s, rel=1e-9)
    verify = moe.decode_step(Deployment(m, H200, lay, "bf16"), np.array([64.0]), 4096, sequences=np.array([16.0]))
    per_query = sum(len(g.layers) * g.mixer.decode_query_read_bytes_per_rank(4096, "bf16", 1) for g in m.mixers)
    assert verify.time_s[0] >= bound.time_s[0]
    assert verify.kv_bytes[0] == pytest.approx(bound.kv_bytes[0] + 48 * per_query)
    if model_id == "glm-5":  # 78 layers x 2,048 top-k x 576 bf16 elements x 2 B = 184,025,088 B per extra token
        assert per_query == 78 * 2048 * 576 * 2
    if model_id == "deepseek-v3":
        assert per_query == 0


def test_compressor_state_moves_a_row_per_token_not_the_whole_state():
    # DeepSeek-V4-Flash, one sequence on one GPU at 4,096 tokens. Cache read: the 128-entry window on 43 layers,
    # top-512 of 1,024 CSA entries + every CSA index key (68 B) on 21 layers, all 32 HCA entries on 20 layers.
    # The compressor states are not read and written whole every step (that was 2 x 11.6 MiB per sequence):
    # each token writes its row of kv_state and score_state (2 x coff x dim x 4 B: CSA coff 2 at 512 + the
    # indexer's 128, HCA coff 1 at 512) and the state is read once per entry it yields (81,920 B / 4 on CSA,
    # 524,288 B / 128 on HCA)
    v4 = cat.model("deepseek-v4-flash")
    step = moe.decode_step(Deployment(v4, H200, ParallelLayout(), "fp8"), 1, 4096)
    cache = 43 * 584 * 128 + 21 * (512 * 584 + 1024 * 68) + 20 * 32 * 584
    state = 21 * (81920 / 4 + 2 * 2 * (512 + 128) * 4) + 20 * (524288 / 128 + 2 * 512 * 4)
    assert step.kv_bytes[0] == pytest.approx(cache + state)
