"""docs/errata.md: every corrected value recomputed by hand (the arithmetic is in the comments), checked against
the planner's function where it has one, and found in the entry's "correct value" cell."""

import math
import re
from pathlib import Path

import numpy as np
import pytest

from core import balance, memory, roofline
from core import speculative as sd
from core.catalog import load_catalog
from core.deployment.bundle import Deployment
from core.deployment.specs import MemoryAssumptions, ParallelLayout, Precision, Workload
from core.hardware import ClusterSpec
from core.serving import disagg

ERRATA = Path(__file__).resolve().parents[2] / "docs" / "errata.md"
cat = load_catalog()


def _rows() -> list[tuple[int, list[str]]]:
    """The errata table's rows as (entry number, cells): # | source says | correct value | arithmetic / evidence."""
    rows = []
    for line in ERRATA.read_text(encoding="utf-8").splitlines():
        if re.match(r"^\|\s*\d+\s*\|", line):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            rows.append((int(cells[0]), cells))
    return rows


def _cell(entry: int, column: int) -> str:
    """Column 1 = source says, 2 = correct value, 3 = arithmetic / evidence."""
    found = [cells for n, cells in _rows() if n == entry]
    assert len(found) == 1, f"errata entry #{entry} appears {len(found)} times"
    return found[0][column]


def _correct(entry: int) -> str:
    return _cell(entry, 2)


def _arithmetic(entry: int) -> str:
    return _cell(entry, 3)


def test_entries_are_numbered_consecutively_with_four_cells():
    rows = _rows()
    assert [n for n, _ in rows] == list(range(1, len(rows) + 1))
    assert len(rows) >= 31
    for n, cells in rows:
        assert len(cells) == 4 and all(cells), f"entry #{n} needs 4 non-empty cells (a stray '|'?)"


def test_12_review_question_at_k8_rounds_to_2212():
    # 0.55^9 = 0.0046054; (1 - 0.0046054) / 0.45 = 0.9953946 / 0.45 = 2.21199 -> 2.212 (not 2.211); / 1.8 = 1.229
    e = (1 - 0.55**9) / 0.45
    assert f"{e:.3f}" == "2.212" and f"{e / 1.8:.2f}" == "1.23"
    assert sd.expected_tokens(0.55, 8) == pytest.approx(e)
    assert sd.speedup(0.55, 8, 0.1) == pytest.approx(e / 1.8)
    assert "2.212" in _arithmetic(12) and "2.211" not in _arithmetic(12)


def test_14_c_range_for_2_4_to_2_6x():
    # E(0.75, 5) = (1 - 0.75^6) / 0.25 = (1 - 0.177978515625) / 0.25 = 3.2880859375
    e = (1 - 0.75**6) / 0.25
    assert e == pytest.approx(3.2880859375)
    # 3.288 / (5c + 1) = 2.6 -> 5c + 1 = 1.26465 -> c = 0.05293; = 2.4 -> 5c + 1 = 1.37004 -> c = 0.07401
    c_lo, c_hi = (e / 2.6 - 1) / 5, (e / 2.4 - 1) / 5
    assert c_lo == pytest.approx(0.0529, abs=1e-4) and c_hi == pytest.approx(0.0740, abs=1e-4)
    assert sd.speedup(0.75, 5, c_lo) == pytest.approx(2.6) and sd.speedup(0.75, 5, c_hi) == pytest.approx(2.4)
    # the old remark's c = 0.03 and 0.05: 3.288 / 1.15 = 2.86x, 3.288 / 1.25 = 2.63x (both above 2.6x)
    assert f"{e / 1.15:.2f}" == "2.86" and f"{e / 1.25:.2f}" == "2.63"
    assert sd.speedup(0.75, 5, 0.03) == pytest.approx(e / 1.15)
    text = _arithmetic(14)
    assert f"c ≈ {c_lo:.3f}–{c_hi:.3f}" in text and "2.86×" in text and "2.63×" in text
    assert "0.03–0.05" not in text


def test_20_disaggregation_break_even_on_the_page():
    # the Disaggregation page's inputs: Llama-3 70B FP8 (KV bf16) on one 8 x H100 node as the building block,
    # 3,000 requests/min (the page's default) of 1,500-token prompts and 800-token outputs, TTFT 3 s,
    # TPOT 100 ms, 30% interference, default memory assumptions and serving stack (sglang)
    model = cat.model("llama-3-70b")
    node = ClusterSpec(gpu=cat.gpu("h100-sxm"), num_nodes=1, gpus_per_node=8)
    traffic = disagg.Traffic(3000.0, 1500, 800, 3.0, 0.100)
    prec = Precision(weights="fp8", kv_cache="bf16", dispatch="fp8")
    eff = cat.efficiency_for("h100-sxm", "sglang")
    d = Deployment(model, node.gpu, ParallelLayout(), prec, eff, cluster=node, assumptions=MemoryAssumptions())
    kw = dict(catalog=cat, interference=0.3)
    # the per-GPU rates and replica sizes come from the layout search: inputs to the hand arithmetic below
    base = disagg.size_pools(d, traffic, **kw)
    p_rate, d_rate = base.prefill_plan.tokens_per_s_per_gpu, base.decode_plan.tokens_per_s_per_gpu
    p_rep, d_rep = base.prefill_plan.replica_gpus, base.decode_plan.replica_gpus
    # the entry quotes them: prefill 6,769 prompt tok/s per GPU on 1-GPU replicas, decode 2,172 on 4-GPU replicas (6,795 /
    # 2,174 before TensorRT-LLM's served step took InferenceX's 1.3.0rc14 points, 6,894 / 2,184 before the refit with
    # MiniMax-M3's 64-client cookbook runs, 7,173 / 2,212 before the whole-step refit on the served composition: each
    # raised the per-token overhead)
    assert (round(p_rate), round(d_rate), p_rep, d_rep) == (6769, 2172, 1, 4)

    def hand(r):
        # per request/min: 1,500 / 60 / 6,769 = 0.003693 prefill GPUs, 800 / 60 / 2,172 = 0.006139 decode GPUs;
        # pools are whole replicas; colocated = (prefill + decode work) x 1.3 in decode replicas
        p, d = r / 60 * 1500 / p_rate, r / 60 * 800 / d_rate
        dis = math.ceil(p / p_rep - 1e-9) * p_rep + math.ceil(d / d_rep - 1e-9) * d_rep
        colo = math.ceil(1.3 * (p + d) / d_rep - 1e-9) * d_rep
        return colo, dis

    # colocated needs 4 GPUs up to 4 / ((0.003693 + 0.006139) x 1.3) = 4 / 0.012783 = 312.9 requests/min, then 8
    step = d_rep / (1.3 * (1500 / 60 / p_rate + 800 / 60 / d_rate))
    assert step == pytest.approx(312.9, abs=0.1)
    assert hand(312) == (4, 6) and hand(313) == (8, 6)
    # the page's grid: 40 rates from 3,000 / 100 to 3,000 x 10, rounded; 300 then 358 around the step
    rates = np.unique(np.round(np.geomspace(30.0, 30_000.0, 40)))
    assert 300.0 in rates and 358.0 in rates and not np.any((rates > 300) & (rates < 358))
    ok = [colo >= dis for colo, dis in (hand(r) for r in rates)]
    first = next(i for i in range(len(rates)) if all(ok[i:]))
    assert rates[first] == 358.0
    colo, dis, even = disagg.break_even_rate(d, traffic, rates, **kw)
    assert even == 358.0
    assert [tuple(x) for x in zip(colo, dis, strict=True)] == [hand(r) for r in rates]
    # on a 1-request grid the crossing is the step itself, 313
    fine = np.arange(250.0, 3000.0)
    assert disagg.break_even_rate(d, traffic, fine, **kw)[2] == math.ceil(step) == 313
    assert "358 requests/min" in _correct(20)
    text = _arithmetic(20)
    assert "6,769" in text and "2,172" in text and "312.9" in text and "**358**" in text


@pytest.mark.parametrize(
    ("alpha", "k", "e_hand"),
    [
        # (1 - a^(K+1)) / (1 - a): 0.6^6 = 0.046656, 0.7^6 = 0.117649, 0.8^6 = 0.262144, 0.9^6 = 0.531441,
        # 0.95^6 = 0.735092; 0.8^9 = 0.134218, 0.9^9 = 0.387420
        (0.60, 5, (1 - 0.046656) / 0.4),  # 2.383
        (0.70, 5, (1 - 0.117649) / 0.3),  # 2.941
        (0.80, 5, (1 - 0.262144) / 0.2),  # 3.689
        (0.90, 5, (1 - 0.531441) / 0.1),  # 4.686
        (0.95, 5, (1 - 0.735091890625) / 0.05),  # 5.298
        (0.80, 8, (1 - 0.134217728) / 0.2),  # 4.329
        (0.90, 8, (1 - 0.387420489) / 0.1),  # 6.126
    ],
)
def test_21_chapter_numerical_table(alpha, k, e_hand):
    # speedup = E / (K c + 1) with c = 0.1: / 1.5 at K = 5, / 1.8 at K = 8
    s_hand = e_hand / (k * 0.1 + 1)
    assert sd.expected_tokens(alpha, k) == pytest.approx(e_hand, rel=1e-6)
    assert sd.speedup(alpha, k, 0.1) == pytest.approx(s_hand, rel=1e-6)
    cell = _correct(21)
    assert f"{e_hand:.3f}" in cell and f"{s_hand:.3f}×" in cell


def test_21_speedups_rounded_as_printed():
    # 2.383 / 1.5 = 1.589, 2.941 / 1.5 = 1.961, 3.689 / 1.5 = 2.460, 4.686 / 1.5 = 3.124, 5.298 / 1.5 = 3.532;
    # 4.329 / 1.8 = 2.405, 6.126 / 1.8 = 3.403
    cell = _correct(21)
    for s in ("1.589×", "1.961×", "2.460×", "3.124×", "3.532×", "2.405×", "3.403×"):
        assert s in cell


def test_22_profitability_thresholds():
    # speedup > 1 <=> E > K c + 1 <=> a + a^2 + ... + a^K > K c (0.5 at K = 5, 0.3 at K = 3)
    def tail(a, k):
        return sum(a**i for i in range(1, k + 1))

    # K = 5: 0.3343 + 0.1118 + 0.0374 + 0.0125 + 0.0042 = 0.5001; the root lies between 0.3342 and 0.3344
    assert tail(0.3342, 5) < 0.5 < tail(0.3344, 5)
    # K = 3: 0.2330 + 0.0543 + 0.0126 = 0.2999; the root lies between 0.2330 and 0.2331
    assert tail(0.2330, 3) < 0.3 < tail(0.2331, 3)
    assert sd.break_even_alpha(5, 0.1) == pytest.approx(0.3343, abs=1e-4)
    assert sd.break_even_alpha(3, 0.1) == pytest.approx(0.2330, abs=1e-4)
    # the chapter's thresholds lose: a = 0.26, K = 5: E = 1.351, / 1.5 = 0.90x; a = 0.19, K = 3: E = 1.233, / 1.3 = 0.95x
    assert 1 + tail(0.26, 5) == pytest.approx(1.351, abs=1e-3) and sd.speedup(0.26, 5, 0.1) == pytest.approx(
        0.90, abs=0.005
    )
    assert 1 + tail(0.19, 3) == pytest.approx(1.233, abs=1e-3) and sd.speedup(0.19, 3, 0.1) == pytest.approx(
        0.95, abs=0.005
    )
    assert "α > 0.334" in _correct(22) and "α > 0.233" in _correct(22)


def test_23_fig_13_1_throughput_per_token():
    # 209 / 63 = 3.32 compares 5 tokens with 4; per token 41.8 ms vs 63 / 4 = 15.75 ms -> 41.8 / 15.75 = 2.654
    per_token = 41.8 / (63 / 4)
    assert 209 / 63 == pytest.approx(3.317, abs=1e-3)
    assert per_token == pytest.approx(2.654, abs=1e-3)
    # the same in tokens/s: 4 / 0.063 = 63.5 against 1 / 0.0418 = 23.9
    assert (4 / 0.063) / (1 / 0.0418) == pytest.approx(per_token)
    assert f"{per_token:.2f}×" == _correct(23)


def test_24_section_13_8_worked_example():
    # 16 sequences every 85 ms: 16 / 0.085 = 188.2 tok/s
    tok_s = 16 / 0.085
    assert tok_s == pytest.approx(188.2, abs=0.1)
    # TP = 2: each H100 reads 70 GB at 3.35 TB/s = 20.9 ms
    weights_ms = 70 / 3.35
    assert weights_ms == pytest.approx(20.9, abs=0.05)
    # KV of the batch: 2 x 80 layers x 8 KV heads x 2,048 x 128 x 2 B = 671 MB per sequence, x 16 = 10.74 GB
    kv = 2 * 80 * 8 * 2048 * 128 * 2 * 16
    assert kv == pytest.approx(10.74e9, rel=1e-3)
    assert 16 * disagg.kv_bytes_per_request(cat.model("llama-3-70b"), 2048) == kv
    # (140 + 10.74) GB over 2 x 3.35 TB/s = 22.5 ms; 85 / 22.5 = 3.8x the bound
    bound_ms = (140 + kv / 1e9) / (2 * 3.35)
    assert bound_ms == pytest.approx(22.5, abs=0.05) and 85 / bound_ms == pytest.approx(3.78, abs=0.01)
    # KV INT8 = half: 5.37 GB; 70 (FP8 target) + 16 (BF16 draft) + 5.37 = 91.4 GB
    kv_int8 = kv / 2 / 1e9
    total = 70 + 16 + kv_int8
    assert kv_int8 == pytest.approx(5.37, abs=0.005) and total == pytest.approx(91.4, abs=0.05)
    # with 2.52x: 16 / (0.085 / 2.52) = 188.2 x 2.52 = 474 tok/s
    spec_tok_s = 16 / (0.085 / 2.52)
    assert spec_tok_s == pytest.approx(474.4, abs=0.1)
    cell = _correct(24)
    for s in (
        f"{tok_s:.0f} tok/s",
        f"{weights_ms:.1f} ms",
        f"{bound_ms:.1f} ms",
        f"KV INT8 {kv_int8:.1f} GB",
        f"total {total:.1f} GB",
        f"{spec_tok_s:.0f} tok/s",
    ):
        assert s in cell


def test_25_70b_bf16_on_one_h100_and_its_utilisation():
    # 70e9 x 2 B = 140 GB; 140 / 80 = 1.75 -> 2 H100s
    assert math.ceil(70e9 * 2 / 80e9) == 2
    # compute 140 GFLOP / 989 TFLOPS = 0.1416 ms; memory 140 GB / 3.35 TB/s = 41.79 ms; 0.1416 / 41.79 = 0.339%
    util = (140e9 / 989e12) / (140e9 / 3.35e12)
    assert util == pytest.approx(0.00339, abs=1e-5)
    # = AI 1 FLOP/B over the H100's bf16 ridge 989 / 3.35 = 295.2
    assert 1 / roofline.ridge_point("h100-sxm") == pytest.approx(util)
    cell = _correct(25)
    assert "2 × H100" in cell and f"{100 * util:.2f}%" in cell and f"{100 * (1 - util):.1f}% idle" in cell


def test_26_aux_loss_is_1_and_n():
    n = 8
    # perfect: N x sum_i (1/N)(1/N) = N x N / N^2 = 1
    assert n * sum((1 / n) * (1 / n) for _ in range(n)) == pytest.approx(1.0)
    assert balance.aux_balance_loss([1 / n] * n, [1 / n] * n) == pytest.approx(1.0)
    # collapsed: f_1 = P_1 = 1, the rest 0 -> N x 1 x 1 = N
    one_hot = [1.0] + [0.0] * (n - 1)
    assert balance.aux_balance_loss(one_hot, one_hot) == pytest.approx(n)
    assert _correct(26).startswith("1 at perfect balance, N when collapsed")


def test_27_ib_hdr_nvlink_and_the_all_to_all_time():
    # HDR: 200 Gb/s / 8 = 25 GB/s per direction; NVLink 4: 900 GB/s both ways = 450 GB/s each way
    hdr, nvl = 200 / 8, 900 / 2
    assert cat.interconnects["ib-hdr"].bw_gbps_per_direction == hdr
    assert cat.interconnects["nvlink4"].bw_gbps_per_direction == nvl
    # #18: 32 x 4,096 tokens x 4,096 x 2 experts x (2 B + 2 B) = 4.29 GB per layer; x 32 layers = 137.4 GB
    per_pass = 32 * 4096 * 4096 * 2 * 4 * 32 / 1e9
    assert per_pass == pytest.approx(137.4, abs=0.05)
    # at the chapter's 50 / 900 GB/s: 2.7 s / 0.15 s; at 25 / 450 GB/s per direction: 5.5 s / 0.31 s
    cell = _correct(27)
    assert f"IB HDR {hdr:.0f} GB/s" in cell and f"{nvl:.0f} GB/s per direction" in cell
    assert f"{per_pass:.0f} GB per pass" in cell
    assert f"{per_pass / 50:.1f} s / {per_pass / 900:.2f} s" in cell  # 2.7 s / 0.15 s
    assert f"{per_pass / hdr:.1f} s / {per_pass / nvl:.2f} s" in cell  # 5.5 s / 0.31 s


def test_28_expert_gemm_utilisation():
    # [8, 4096] x [4096, 14336] in bf16: 2 x 8 x 4096 x 14336 / (2 B x (4096 x 14336 + 8 x 4096 + 8 x 14336)) = 7.98
    ai = 2 * 8 * 4096 * 14336 / (2 * (4096 * 14336 + 8 * 4096 + 8 * 14336))
    ridge = 989 / 3.35  # 295.2 FLOP/B
    assert ai == pytest.approx(7.98, abs=0.005) and ridge == pytest.approx(295.2, abs=0.05)
    assert roofline.gemm_intensity(8, 4096, 14336) == pytest.approx(ai)
    assert roofline.ridge_point("h100-sxm") == pytest.approx(ridge)
    # a memory-bound GEMM runs at AI / ridge of the peak: 7.98 / 295.2 = 2.70%
    assert ai / ridge == pytest.approx(0.0270, abs=5e-5)
    assert f"{100 * ai / ridge:.1f}%" == _correct(28)


def test_29_imbalance_loss():
    # the hot expert takes 45% of 8: 0.45 / 0.125 = 3.6
    loads = [0.10, 0.09, 0.11, 0.08, 0.45, 0.07, 0.05, 0.05]
    assert sum(loads) == pytest.approx(1.0)
    assert balance.imbalance_ratio(loads) == pytest.approx(0.45 / 0.125) == pytest.approx(3.6)
    # the expert phase waits for the busiest GPU: 1 - 1 / 3.6 = 72.2% lost there
    lost = 1 - 1 / 3.6
    assert 1 - balance.throughput_factor(loads) == pytest.approx(lost)
    # overall 34% needs 1 / (1 + 2.6 f) = 0.66 -> f = (1 / 0.66 - 1) / 2.6 = 0.198
    f = (1 / 0.66 - 1) / 2.6
    assert f == pytest.approx(0.198, abs=5e-4)
    assert 1 / ((1 - f) + 3.6 * f) == pytest.approx(0.66)
    cell = _correct(29)
    assert f"{100 * lost:.0f}% of the expert phase" in cell and f"f ≈ {f:.3f}" in cell


def test_30_deepseek_v3_moe_layers_and_all_to_all_bytes():
    # DeepSeek-V3: 61 layers, the first 3 dense -> 58 MoE layers
    ds = cat.model("deepseek-v3")
    assert ds.num_layers == 61 and ds.num_dense_layers == 3
    assert ds.num_moe_layers == 61 - 3 == 58
    # 4,096 tokens x 7,168 x 8 experts x 2 (dispatch + combine) x 1 B = 469.76 MB per layer; x 58 = 27.25 GB
    per_layer = 4096 * ds.hidden_size * ds.moe.top_k * 2 * 1
    assert per_layer == 469_762_048
    assert per_layer * 58 / 1e9 == pytest.approx(27.25, abs=0.005)
    assert per_layer * 61 / 1e9 == pytest.approx(28.66, abs=0.005)  # the blog's "~29 GB"
    assert f"58 MoE layers, {per_layer * 58 / 1e9:.1f} GB" == _correct(30)


def test_31_mixtral_8x22b_fp8_kv_headroom_on_2_h100():
    m, gpu = cat.model("mixtral-8x22b"), cat.gpu("h100-sxm")
    h, layers, experts, ffn, vocab = 6144, 56, 8, 16384, 32000
    assert (m.hidden_size, m.num_layers, m.moe.n_routed_experts, m.moe.expert_intermediate_size) == (
        h,
        layers,
        experts,
        ffn,
    )
    # FP8 weights (1 B + one fp32 scale per 128 x 128 block): routed experts 56 x 8 x 3 x 6,144 x 16,384 = 135.29 B,
    # attention 56 x (2 x 6,144^2 + 2 x 6,144 x 1,024) = 56 x 88.08 M = 4.93 B
    experts_p = layers * experts * 3 * h * ffn
    attention_p = layers * (2 * h * h + 2 * h * 8 * 128)
    assert experts_p == 135_291_469_824 and attention_p == 4_932_501_504
    fp8 = (experts_p + attention_p) * (1 + 4 / 128**2)
    # BF16: embedding + head 2 x 32,000 x 6,144 x 2 B (split over TP), router 56 x 8 x 6,144 x 2 B and
    # norms (2 x 56 + 1) x 6,144 x 2 B (replicated)
    emb_head = 2 * vocab * h * 2
    router, norms = layers * experts * h * 2, (2 * layers + 1) * h * 2
    assert (fp8 + emb_head + router + norms) / 1e9 == pytest.approx(141.05, abs=0.005)
    per_gpu = (fp8 + emb_head) / 2 + router + norms
    assert per_gpu / 1e9 == pytest.approx(70.53, abs=0.005)
    # vLLM: 0.9 x what CUDA reports (85,045,477,376 B, errata #11) - weights - activations
    # (8,192 x 6,144 x 2 B x 16) - 2.5 GB reserve = 76.54 - 70.53 - 1.61 - 2.5 = 1.90 GB
    assert gpu.memory_bytes == 85_045_477_376
    budget = 0.9 * 85_045_477_376 - per_gpu - 8192 * h * 2 * 16 - 2.5e9
    assert budget / 1e9 == pytest.approx(1.90, abs=0.005)
    wl = Workload(batch=1, input_len=1, output_len=1)
    # vLLM's plain --tensor-parallel-size 2 shards each expert (expert TP 2); with EP 2 the bytes are the same
    for lay in (ParallelLayout(attention_tp=2, expert_tp=2), ParallelLayout(attention_tp=2, ep=2)):
        got = memory.per_gpu_memory(Deployment(m, gpu, lay, "fp8"), wl)
        assert got.weights_bytes == pytest.approx(per_gpu, rel=1e-9)
        assert got.kv_budget_bytes == pytest.approx(budget, rel=1e-6)
    # KV per token per GPU: 2 x 4 KV heads x 128 x 2 B x 56 = 114,688 B -> 1.9011e9 / 114,688 = 16,576 tokens
    tokens = budget // (2 * 4 * 128 * 2 * layers)
    assert tokens == 16_576 and tokens // 2048 == 8
    assert f"{budget / 1e9:.2f} GB per GPU" in _correct(31)
    assert "16,576 tokens" in _arithmetic(31)
