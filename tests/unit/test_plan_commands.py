"""Launch commands for a plan (core/serving/plan_commands.py, core/serving/launch/checkpoints.py): the checkpoint of
the planned precision (layouts review 3, W1), the all-to-all backend per phase (W2), DeepEP's buffer and the CUDA-graph
batch sized from the plan (W3), dense layers per DP rank (W4), custom model code (W8), the memory fractions from the
scenario's assumptions and speculative decoding the plan was not scored with (M9). Hand values in the comments."""

from __future__ import annotations

import shlex

import pytest
import yaml

from core.catalog import load_catalog
from core.deployment.bundle import Deployment
from core.deployment.specs import MemoryAssumptions, ParallelLayout, Precision, SpecDecodeConfig, Workload
from core.serving.launch.checkpoints import checkpoint_for, model_checkpoints
from core.serving.operating_point import Plan
from core.serving.plan_commands import plan_commands

CAT = load_catalog()
H200 = CAT.gpu("h200")
DP8_EP8 = ParallelLayout(attention_dp=8, ep=8)


def words(command: str) -> list[str]:
    return shlex.split(command.replace("\\\n", " "), comments=True)


def value(command: str, flag: str) -> str:
    w = words(command)
    return w[w.index(flag) + 1]


def on(model, precision="fp8", **kw) -> Deployment:
    """``model`` at ``precision`` on an H200, whose memory sizes the commands' fractions (their layout is the plan's)."""
    return Deployment(model, H200, ParallelLayout(), precision, **kw)


def decode_plan(seqs_per_gpu: float = 166, overlap: str = "none", lay: ParallelLayout = DP8_EP8) -> Plan:
    # S1 of the review: DeepSeek-V3 on 8 x H200, DP-attn8 EP8 decode at 166 sequences per GPU, 52 ms, 3,215 tok/s/GPU
    return Plan(lay, "decode", 0, seqs_per_gpu, 0.052, 3215.0, 0.0, overlap=overlap, latency_s=0.052)


def prefill_plan() -> Plan:
    return Plan(DP8_EP8, "prefill", 0, 16384, 1.7, 9625.0, 1.0, overlap="two_batch", latency_s=1.7)


# ------------------------------------------------------------------------------------------ W1: checkpoints


@pytest.mark.parametrize(
    "model_id, precision, repo",
    [
        ("qwen3-235b-a22b", "fp8", "Qwen/Qwen3-235B-A22B-FP8"),  # not the BF16 Qwen/Qwen3-235B-A22B
        ("glm-5.2", "fp8", "zai-org/GLM-5.2-FP8"),
        ("llama-4-maverick", "fp8", "meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8"),
        ("deepseek-v3", "nvfp4", "nvidia/DeepSeek-V3-0324-FP4"),  # not the FP8 deepseek-ai/DeepSeek-V3
        ("deepseek-v3", "fp8", "deepseek-ai/DeepSeek-V3"),
        ("qwen3-235b-a22b", "bf16", "Qwen/Qwen3-235B-A22B"),
        ("kimi-k2.5", Precision(weights="bf16", routed_experts="int4"), "moonshotai/Kimi-K2.5"),
    ],
)
def test_the_command_loads_the_checkpoint_of_the_planned_precision(model_id, precision, repo):
    choice = checkpoint_for(CAT.model(model_id), precision)
    assert (choice.model_id, choice.quantization) == (repo, None)
    assert any(n.startswith(f"Checkpoint {repo}: ") and "source: " in n for n in choice.notes)
    cmds, _ = plan_commands(decode_plan(), on(CAT.model(model_id), precision))
    for c in cmds.values():
        assert repo in words(c.command), c.engine


def test_no_published_fp8_checkpoint_quantises_on_load_where_the_engine_can():
    # Llama 4 Scout has no official FP8 repository: vLLM and SGLang load BF16 with --quantization fp8 (the SGLang
    # cookbook's Scout recipe does the same); TensorRT-LLM runs pre-quantised checkpoints only, which a note says
    scout = CAT.model("llama-4-scout")
    cmds, notes = plan_commands(decode_plan(), on(scout, "fp8"))
    assert value(cmds["vllm"].command, "--quantization") == "fp8"
    assert value(cmds["sglang"].command, "--quantization") == "fp8"
    assert "meta-llama/Llama-4-Scout-17B-16E-Instruct" in words(cmds["trtllm"].command)
    assert any("does not quantise on load" in n for n in cmds["trtllm"].notes)
    assert any("No published fp8 checkpoint of Llama 4 Scout" in n or "No published fp8 checkpoint" in n for n in notes)


def test_a_four_bit_plan_without_a_four_bit_checkpoint_gets_a_placeholder_not_the_wide_one():
    mixtral = CAT.model("mixtral-8x7b")
    choice = checkpoint_for(mixtral, "nvfp4")
    assert choice.model_id == "path/to/mixtral-8x7b-nvfp4" and choice.checkpoint is None
    assert "quantise mistralai/Mixtral-8x7B-v0.1 (bf16) to nvfp4" in choice.notes[0]


def test_a_plan_wider_than_any_published_checkpoint_says_so():
    # gpt-oss-120b is published with MXFP4 experts: an fp8 plan serves it as published and says the plan was wider
    choice = checkpoint_for(CAT.model("gpt-oss-120b"), "fp8")
    assert choice.model_id == "openai/gpt-oss-120b" and choice.quantization is None
    assert "published in mxfp4 at most" in choice.notes[0]


def test_every_catalog_model_has_its_own_checkpoint_first_and_sources_for_the_rest():
    for m in CAT.models.values():
        cps = model_checkpoints(m)
        assert cps[0].repo == m.hf_id
        assert all(c.source and c.confidence in ("primary", "secondary") for c in cps)
        assert len({c.repo for c in cps}) == len(cps), m.id


# --------------------------------------------------------------------- W2: vLLM's all-to-all per phase


def test_vllm_all_to_all_backend_follows_the_phase_and_dbo_needs_deepep():
    dsv3 = CAT.model("deepseek-v3")
    pre, _ = plan_commands(prefill_plan(), on(dsv3, "fp8"), role="prefill")
    dec, _ = plan_commands(decode_plan(), on(dsv3, "fp8"), role="decode")
    agg, _ = plan_commands(decode_plan(), on(dsv3, "fp8"))
    assert value(pre["vllm"].command, "--all2all-backend") == "deepep_high_throughput"
    assert "--enable-dbo" in words(pre["vllm"].command)  # two-batch overlap on DeepEP
    assert value(dec["vllm"].command, "--all2all-backend") == "deepep_low_latency"
    assert value(agg["vllm"].command, "--all2all-backend") == "deepep_low_latency"
    assert any("written for the plan's decode phase" in n for n in agg["vllm"].notes)
    # TP8 with EP8 (data parallel 1): vLLM uses no all-to-all kernel, so neither the backend nor DBO is written
    tp8, _ = plan_commands(
        decode_plan(20, "two_batch", ParallelLayout(attention_tp=8, ep=8)), on(dsv3, "fp8"), role="decode"
    )
    w = words(tp8["vllm"].command)
    assert "--all2all-backend" not in w and "--enable-dbo" not in w
    assert any("--enable-dbo is left out" in n for n in tp8["vllm"].notes)


# -------------------------------------------------- W3 / W4 / M9: SGLang's DeepEP buffer, dense TP, speculation


def test_sglang_deepep_buffer_and_cuda_graph_batch_are_sized_from_the_plan():
    dsv3 = CAT.model("deepseek-v3")
    cmds, notes = plan_commands(decode_plan(), on(dsv3, "fp8"), role="decode")
    sg = cmds["sglang"].command
    # 166 sequences per GPU x attention TP 1 = 166 per rank, one token each: 166 > the default 128
    assert "SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK=166 python -m sglang.launch_server" in sg
    assert value(sg, "--cuda-graph-max-bs") == "166" and value(sg, "--deepep-mode") == "low_latency"
    assert "--moe-dense-tp-size" in words(sg) and value(sg, "--moe-dense-tp-size") == "1"
    assert "--enable-dp-lm-head" in words(sg)
    assert not any("scored without speculative decoding" in n for n in notes)
    # MTP with one draft token: 166 x 2 = 332 tokens per rank (M9: the commands count the draft) and a note that
    # the plan was scored without speculation; 2 x (332 + 1) = 666 <= NVSHMEM's 1024 default queue depth
    mtp = SpecDecodeConfig(method="mtp", num_speculative_tokens=1)
    cmds, notes = plan_commands(decode_plan(), on(dsv3, "fp8", spec=mtp), role="decode")
    assert "SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK=332 " in cmds["sglang"].command
    assert "NVSHMEM_QP_DEPTH" not in cmds["sglang"].command
    assert value(cmds["vllm"].command, "--max-cudagraph-capture-size") == "332"
    assert "VLLM_MOE_DP_CHUNK_SIZE=332 " in cmds["vllm"].command  # above vLLM's 256-token chunk
    assert any("scored without speculative decoding" in n and "mtp with 1 draft token" in n for n in notes)
    # two-batch overlap halves the tokens per micro-batch: 300 x 2 / 2 = 300; 600 sequences x 2 / 2 = 600 needs
    # a queue depth of 2 x 601 = 1202 > 1024
    cmds, _ = plan_commands(decode_plan(300, "two_batch"), on(dsv3, "fp8", spec=mtp), role="decode")
    assert "SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK=300 " in cmds["sglang"].command
    cmds, _ = plan_commands(decode_plan(600, "two_batch"), on(dsv3, "fp8", spec=mtp), role="decode")
    assert "NVSHMEM_QP_DEPTH=1202 " in cmds["sglang"].command and "NVSHMEM_QP_DEPTH=1202 " in cmds["vllm"].command
    # a prefill worker runs DeepEP's normal kernels: no low-latency buffer, no CUDA-graph batch
    pre, _ = plan_commands(prefill_plan(), on(dsv3, "fp8"), role="prefill")
    assert "SGLANG_DEEPEP" not in pre["sglang"].command and "--cuda-graph-max-bs" not in words(pre["sglang"].command)
    assert value(pre["sglang"].command, "--deepep-mode") == "normal"


# ------------------------------------------------------------------------- W8 and the memory fractions


def test_custom_model_code_is_trusted_where_the_model_needs_it():
    kimi, _ = plan_commands(decode_plan(), on(CAT.model("kimi-k2"), "fp8"))
    assert "--trust-remote-code" in words(kimi["vllm"].command)
    assert "--trust-remote-code" in words(kimi["sglang"].command)
    assert yaml.safe_load(kimi["trtllm"].config_yaml)["trust_remote_code"] is True
    qwen, _ = plan_commands(decode_plan(), on(CAT.model("qwen3-235b-a22b"), "fp8"))
    assert all("trust" not in c.command + c.config_yaml for c in qwen.values())


def test_memory_fractions_come_from_the_scenario_assumptions():
    dsv3 = CAT.model("deepseek-v3")
    cmds, notes = plan_commands(decode_plan(), on(dsv3, "fp8", assumptions=MemoryAssumptions()))
    assert value(cmds["vllm"].command, "--gpu-memory-utilization") == "0.9"
    # H200: 150,109,945,856 B; activations 8,192 x 7,168 x 2 B x 16 = 1.879 GB, reserve 2.5 GB:
    # static = 0.9 - (1.879 + 2.5) / 150.110 = 0.8708 -> 0.87 (weights + KV pool)
    assert value(cmds["sglang"].command, "--mem-fraction-static") == "0.87"
    # KV 29.879 GB of what is left after 100.841 GB of weights and the 4.379 GB of buffers (44.890 GB): 0.6656 -> 0.665
    kv = yaml.safe_load(cmds["trtllm"].config_yaml)["kv_cache_config"]
    assert kv == {"free_gpu_memory_fraction": 0.665}
    assert any("100.8 GB of weights per GPU, 29.9 GB of KV cache" in n for n in notes)
    low = MemoryAssumptions(gpu_memory_utilization=0.8)
    cmds, _ = plan_commands(decode_plan(), on(dsv3, "fp8", assumptions=low))
    assert value(cmds["vllm"].command, "--gpu-memory-utilization") == "0.8"
    assert value(cmds["sglang"].command, "--mem-fraction-static") == "0.77"  # 0.8708 - 0.1 = 0.7708


# ------------------------------------------------------------------- M12: TensorRT-LLM's substituted layout

QWEN_TP2 = ParallelLayout(attention_tp=2, attention_dp=4, ep=8)


def _qwen_h100():
    wl = Workload(batch=1, input_len=2048, output_len=512)
    return Deployment(CAT.model("qwen3-235b-a22b"), CAT.gpu("h100-sxm"), ParallelLayout(), "fp8", workload=wl)


def test_trtllm_sizes_the_attention_dp_it_launches_for_a_tp2_attention_plan():
    """Review 3 M12, S5: Qwen3-235B FP8 on 8 x H100, decode #1 TP2 · DP-attn4 · EP8 at 80.5 sequences per GPU (161 per
    TP-2 rank, each GPU holding 2 of the 4 KV heads). TensorRT-LLM runs it as attention DP 8 and kept max_batch_size
    161 per rank: 161 sequences with all 4 KV heads on one GPU, twice the KV the plan sized.
    By hand at DP 8: a sequence's KV is 94 layers x 4 KV heads x 128 x (K + V) x 2 B = 192,512 B a token x 2,560 =
    492.83 MB. Weights per GPU: routed experts 128 x 3 x 4,096 x 1,536 x 94 / 8 at FP8 = 28.39 GB (as in the plan),
    attention (4,096 x (8,192 + 512 + 512) + 8,192 x 4,096) x 94 = 6.70 GB on every GPU (the plan's TP 2 held 3.35),
    embedding and LM head 151,936 x 4,096 x 2 B = 1.245 GB each, router 0.10 GB: 37.69 GB. Usable 0.9 x 85.045 GB =
    76.54 GB, less 1.07 GB of activations and 2.5 GB reserve: 35.28 GB of KV / 492.83 MB = 71.6, so 71 sequences."""
    plan = Plan(QWEN_TP2, "decode", 0, 80.5, 0.038, 2128.0, 0.0, overlap="none", latency_s=0.038)
    cmds, _ = plan_commands(plan, _qwen_h100(), role="decode")
    trt = cmds["trtllm"]
    assert value(trt.command, "--tp_size") == "8"
    assert value(trt.command, "--max_batch_size") == "71"  # was 161
    cfg = yaml.safe_load(trt.config_yaml)
    assert cfg["enable_attention_dp"] is True and cfg["cuda_graph_config"]["max_batch_size"] == 71
    # KV 35.28 GB of what is left after 37.69 GB of weights and 3.57 GB of buffers (43.78 GB): 0.8058 -> 0.805 (the
    # TP-2 layout's 39.88 / 48.38 = 0.824 was written before)
    assert cfg["kv_cache_config"]["free_gpu_memory_fraction"] == 0.805
    assert any("attention DP 8, sized for it: max_batch_size 71 per rank" in n for n in trt.notes), trt.notes
    assert any("cut to the 71 sequences of 2,560 tokens" in n for n in trt.notes)
    # vLLM and SGLang run TP 2 x DP 4 as planned: 161 sequences per attention-DP rank, 644 in all for SGLang
    assert value(cmds["vllm"].command, "--max-num-seqs") == "161"
    assert value(cmds["sglang"].command, "--max-running-requests") == "644"


def test_trtllm_prefill_chunk_is_per_gpu_when_attention_tp_is_substituted():
    # a TP2 · DP-attn4 prefill plan at 10,240 prompt tokens per GPU: 20,480 per TP-2 rank, 10,240 per GPU at DP 8
    plan = Plan(QWEN_TP2, "prefill", 0, 10240, 1.0, 10240.0, 1.0, overlap="none", latency_s=1.0)
    cmds, _ = plan_commands(plan, _qwen_h100(), role="prefill")
    assert value(cmds["trtllm"].command, "--max_num_tokens") == "10240"  # was 20480
    assert value(cmds["sglang"].command, "--chunked-prefill-size") == str(20480 * 4)


def test_the_speculative_note_states_the_plan_with_separators_and_units():
    """Review 3 M14: the note said 'The plan (2.458e+04 per GPU, ...)' for a prefill plan of 24,576 prompt tokens per
    GPU per step: no unit, e-notation. Now the figure carries its unit in both phases."""
    mtp = SpecDecodeConfig(method="mtp", num_speculative_tokens=1)
    d = on(CAT.model("deepseek-v3"), "fp8", spec=mtp)
    plan = Plan(DP8_EP8, "prefill", 0, 24576, 2.5, 9693.0, 1.0, overlap="two_batch", latency_s=2.5)
    _, notes = plan_commands(plan, d, role="prefill")
    (note,) = [n for n in notes if "scored without speculative decoding" in n]
    assert note.startswith("The plan (24,576 prompt tokens per GPU per step, 9,693 prompt tokens/s per GPU)")
    assert "e+0" not in note
    _, notes = plan_commands(decode_plan(80.5), d, role="decode")
    (note,) = [n for n in notes if "scored without speculative decoding" in n]
    assert note.startswith("The plan (80.5 sequences per GPU, 3,215 output tokens/s per GPU)")


def test_the_recurrent_state_dtype_the_plan_was_scored_with_is_launched():
    # Qwen3.5-397B planned with its Gated DeltaNet state in bf16 (Precision.linear_state): every engine's command
    # stores it so (vLLM --mamba-ssm-cache-dtype, SGLang --mamba-ssm-dtype, TensorRT-LLM kv_cache_config); the
    # checkpoint's fp32 state writes nothing
    q35 = CAT.model("qwen3.5-397b-a17b")
    cmds, _ = plan_commands(decode_plan(64), on(q35, Precision(weights="fp8", kv_cache="fp8", linear_state="bf16")))
    assert value(cmds["vllm"].command, "--mamba-ssm-cache-dtype") == "bfloat16"
    assert value(cmds["sglang"].command, "--mamba-ssm-dtype") == "bfloat16"
    assert yaml.safe_load(cmds["trtllm"].config_yaml)["kv_cache_config"]["mamba_ssm_cache_dtype"] == "bfloat16"
    plain, _ = plan_commands(decode_plan(64), on(q35, Precision(weights="fp8", kv_cache="fp8")))
    assert "--mamba-ssm-cache-dtype" not in words(plain["vllm"].command)
