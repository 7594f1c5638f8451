"""Engine launch commands (core/serving/launch.py): the exact commands for a few real plans, written by hand from the
engines' docs (catalogs/engines.yaml lists the pages); every generated flag is a documented one; bad specs are
refused with a message; nothing a user types reaches the shell unquoted."""

from __future__ import annotations

import dataclasses
import itertools
import json
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from core.deployment.specs import ParallelLayout
from core.serving.launch import ENGINES, LaunchCommand, LaunchSpec, launch_command, launch_commands, spec_from_plan

ENGINES_YAML = yaml.safe_load((Path(__file__).resolve().parents[2] / "catalogs" / "engines.yaml").read_text())


def tokens(command: str) -> list[str]:
    """The shell words of a generated command (continuations joined, comments dropped)."""
    return shlex.split(command.replace("\\\n", " "), comments=True)


# ---------------------------------------------------------------- DeepSeek-V3 decode: DP-attention 16 x EP 16

DSV3_DECODE = LaunchSpec(
    "deepseek-ai/DeepSeek-V3",
    attention_tp=1,
    attention_dp=16,
    ep=16,
    expert_tp=1,
    redundant_experts=32,
    max_batched_tokens=256,
    max_num_seqs=128,
    speculative="mtp",
    num_speculative_tokens=1,
    role="decode",
)

DSV3_VLLM = r"""# written for vLLM 0.33.0
# node 0 of 2 (head)
vllm serve deepseek-ai/DeepSeek-V3 \
  --tensor-parallel-size 1 \
  --data-parallel-size 16 \
  --data-parallel-size-local 8 \
  --data-parallel-address "$HEAD_IP" \
  --data-parallel-rpc-port 13345 \
  --enable-expert-parallel \
  --all2all-backend deepep_low_latency \
  --enable-eplb \
  --eplb-config '{"num_redundant_experts":32}' \
  --max-num-batched-tokens 256 \
  --max-num-seqs 128 \
  --max-cudagraph-capture-size 256 \
  --speculative-config '{"method":"mtp","num_speculative_tokens":1}' \
  --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'

# node 1 of 2
vllm serve deepseek-ai/DeepSeek-V3 \
  --tensor-parallel-size 1 \
  --data-parallel-size 16 \
  --data-parallel-size-local 8 \
  --data-parallel-address "$HEAD_IP" \
  --data-parallel-rpc-port 13345 \
  --data-parallel-start-rank 8 \
  --headless \
  --enable-expert-parallel \
  --all2all-backend deepep_low_latency \
  --enable-eplb \
  --eplb-config '{"num_redundant_experts":32}' \
  --max-num-batched-tokens 256 \
  --max-num-seqs 128 \
  --max-cudagraph-capture-size 256 \
  --speculative-config '{"method":"mtp","num_speculative_tokens":1}' \
  --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'"""

# 128 sequences per rank x (1 MTP draft + 1) = 256 tokens per rank per decode step: DeepEP's buffer (default 128)
DSV3_SGLANG_NODE0 = r"""SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK=256 python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 \
  --tp-size 16 \
  --dp-size 16 \
  --enable-dp-attention \
  --moe-dense-tp-size 1 \
  --enable-dp-lm-head \
  --dist-init-addr "$HEAD_IP:5000" \
  --nnodes 2 \
  --node-rank 0 \
  --ep-size 16 \
  --moe-a2a-backend deepep \
  --deepep-mode low_latency \
  --enable-eplb \
  --ep-num-redundant-experts 32 \
  --chunked-prefill-size 4096 \
  --max-running-requests 2048 \
  --cuda-graph-max-bs 128 \
  --speculative-algorithm EAGLE \
  --speculative-num-steps 1 \
  --speculative-eagle-topk 1 \
  --speculative-num-draft-tokens 2 \
  --disaggregation-mode decode \
  --disaggregation-transfer-backend nixl"""

DSV3_TRTLLM = r"""# written for TensorRT-LLM 1.3.0rc27
trtllm-serve deepseek-ai/DeepSeek-V3 \
  --tp_size 16 \
  --ep_size 16 \
  --max_batch_size 128 \
  --max_num_tokens 256 \
  --extra_llm_api_options extra_llm_api_options.yaml"""

DSV3_TRTLLM_YAML = """enable_attention_dp: true
cuda_graph_config:
  enable_padding: true
  max_batch_size: 128
speculative_config:
  decoding_type: MTP
  num_nextn_predict_layers: 1
cache_transceiver_config:
  backend: NIXL
"""


def test_deepseek_v3_decode_dp16_ep16_on_two_nodes():
    cmds = launch_commands(DSV3_DECODE)
    assert set(cmds) == {"vllm", "sglang", "trtllm"}
    assert cmds["vllm"].command == DSV3_VLLM
    assert cmds["vllm"].version == "0.33.0"

    sg = cmds["sglang"]
    node1 = DSV3_SGLANG_NODE0.replace("--node-rank 0", "--node-rank 1")
    assert (
        sg.command
        == f"# written for SGLang 0.5.16\n# node 0 of 2 (head)\n{DSV3_SGLANG_NODE0}\n\n# node 1 of 2\n{node1}"
    )
    # SGLang's totals are split over the 16 attention-DP ranks: 256 tokens, 128 sequences each
    assert any("256 tokens and 128 sequences each" in n for n in sg.notes)
    # a decode worker of a PD pair carries no prompts: no attention-DP pacing note (tech blog 10: disaggregation
    # prevents the imbalance)
    assert not any("busiest rank's pace" in n for n in cmds["trtllm"].notes)

    trt = cmds["trtllm"]
    assert trt.command == DSV3_TRTLLM
    assert trt.config_yaml == DSV3_TRTLLM_YAML
    assert trt.version == "1.3.0rc27"
    assert any("num_slots: <routed experts + 32>" in n for n in trt.notes)  # EPLB slots need the expert count
    assert any("trtllm-llmapi-launch" in n for n in trt.notes)  # 16 GPUs on nodes of 8
    for c in cmds.values():
        assert any("decode worker of a disaggregated pair" in n for n in c.notes)
    assert any("HEAD_IP set to node 0's address" in n for n in cmds["vllm"].notes)


# --------------------------------------------- Qwen3-235B: attention TP2 x DP4, expert TP4 x EP2 on 8 GPUs

QWEN = LaunchSpec("Qwen/Qwen3-235B-A22B", attention_tp=2, attention_dp=4, ep=2, expert_tp=4)


def test_qwen3_mixed_expert_tp_and_ep():
    cmds = launch_commands(QWEN)
    # vLLM: EP spans TP x DP; a mixed expert TP x EP layout cannot be written, the nearest (EP 8) is
    assert cmds["vllm"].command == (
        "# written for vLLM 0.33.0\n"
        "vllm serve Qwen/Qwen3-235B-A22B \\\n"
        "  --tensor-parallel-size 2 \\\n"
        "  --data-parallel-size 4 \\\n"
        "  --enable-expert-parallel \\\n"
        "  --all2all-backend deepep_low_latency \\\n"
        "  --max-num-batched-tokens 8192 \\\n"
        "  --max-num-seqs 256 \\\n"
        "  --max-cudagraph-capture-size 256"
    )
    note, backend = cmds["vllm"].notes
    assert "cannot run a mixed expert TP x EP layout (expert TP 4 x EP 2)" in note and "EP 8 without expert TP" in note
    assert "deepep_low_latency is written for the plan's decode phase" in backend
    # SGLang expresses it exactly: TP 8 with 4 attention-DP ranks (attention TP 2), EP 2 (MoE TP 8/2 = 4);
    # no DeepEP (it would force EP = 8)
    assert cmds["sglang"].command == (
        "# written for SGLang 0.5.16\n"
        "python -m sglang.launch_server --model-path Qwen/Qwen3-235B-A22B \\\n"
        "  --tp-size 8 \\\n"
        "  --dp-size 4 \\\n"
        "  --enable-dp-attention \\\n"
        "  --moe-dense-tp-size 1 \\\n"
        "  --enable-dp-lm-head \\\n"
        "  --ep-size 2 \\\n"
        "  --chunked-prefill-size 32768 \\\n"
        "  --max-running-requests 1024 \\\n"
        "  --cuda-graph-max-bs 256"
    )
    # dense MLPs run per DP rank (moe-dense-tp-size 1) with whole weights: said, the plan splits them over TP 2
    assert any("plan splits them over attention TP 2" in n for n in cmds["sglang"].notes)
    # TensorRT-LLM: hybrid expert TP x EP is expressible, attention TP x DP is not (attention DP runs at TP 1)
    trt = cmds["trtllm"]
    assert trt.command == (
        "# written for TensorRT-LLM 1.3.0rc27\n"
        "trtllm-serve Qwen/Qwen3-235B-A22B \\\n"
        "  --tp_size 8 \\\n"
        "  --ep_size 2 \\\n"
        "  --max_batch_size 256 \\\n"
        "  --max_num_tokens 8192 \\\n"
        "  --extra_llm_api_options extra_llm_api_options.yaml"
    )
    assert yaml.safe_load(trt.config_yaml) == {
        "enable_attention_dp": True,
        "moe_tensor_parallel_size": 4,
        "cuda_graph_config": {"enable_padding": True, "max_batch_size": 256},
    }
    assert any("attention TP 2 x DP 4 is not expressible" in n and "attention DP 8" in n for n in trt.notes)
    # colocated attention DP: the pacing the plan is scored with, and TensorRT-LLM's balance setting, not written
    # (tech blog 10: 33,499 / 25,664 = 1.31x with context wait alone, first tokens held back)
    assert any("1.54x at 8 ranks" in n and "enable_balance: true" in n and "1.31x faster" in n for n in trt.notes)
    assert "attention_dp_config" not in yaml.safe_load(trt.config_yaml)


# --------------------------------------------------------------------------- gpt-oss-120b on one GPU


def test_gpt_oss_120b_on_one_gpu():
    cmds = launch_commands(LaunchSpec("openai/gpt-oss-120b"))
    assert cmds["vllm"].command == (
        "# written for vLLM 0.33.0\n"
        "vllm serve openai/gpt-oss-120b \\\n"
        "  --tensor-parallel-size 1 \\\n"
        "  --max-num-batched-tokens 8192 \\\n"
        "  --max-num-seqs 256 \\\n"
        "  --max-cudagraph-capture-size 256"
    )
    assert cmds["vllm"].notes == () and cmds["sglang"].notes == ()
    assert cmds["sglang"].command == (
        "# written for SGLang 0.5.16\n"
        "python -m sglang.launch_server --model-path openai/gpt-oss-120b \\\n"
        "  --tp-size 1 \\\n"
        "  --chunked-prefill-size 8192 \\\n"
        "  --max-running-requests 256 \\\n"
        "  --cuda-graph-max-bs 256"
    )
    assert cmds["trtllm"].command == (
        "# written for TensorRT-LLM 1.3.0rc27\n"
        "trtllm-serve openai/gpt-oss-120b \\\n"
        "  --tp_size 1 \\\n"
        "  --max_batch_size 256 \\\n"
        "  --max_num_tokens 8192 \\\n"
        "  --extra_llm_api_options extra_llm_api_options.yaml"
    )
    assert cmds["trtllm"].config_yaml == "cuda_graph_config:\n  enable_padding: true\n  max_batch_size: 256\n"


# --------------------------------------------------------------------------------- Llama-3-70B dense TP8

LLAMA = LaunchSpec(
    "meta-llama/Meta-Llama-3-70B-Instruct", attention_tp=8, expert_tp=8, kv_cache_dtype="fp8", is_moe=False
)


def test_llama3_70b_dense_tp8_has_no_expert_flags():
    cmds = launch_commands(LLAMA)
    assert cmds["vllm"].command == (
        "# written for vLLM 0.33.0\n"
        "vllm serve meta-llama/Meta-Llama-3-70B-Instruct \\\n"
        "  --tensor-parallel-size 8 \\\n"
        "  --max-num-batched-tokens 8192 \\\n"
        "  --max-num-seqs 256 \\\n"
        "  --max-cudagraph-capture-size 256 \\\n"
        "  --kv-cache-dtype fp8"
    )
    assert cmds["sglang"].command == (
        "# written for SGLang 0.5.16\n"
        "python -m sglang.launch_server --model-path meta-llama/Meta-Llama-3-70B-Instruct \\\n"
        "  --tp-size 8 \\\n"
        "  --chunked-prefill-size 8192 \\\n"
        "  --max-running-requests 256 \\\n"
        "  --cuda-graph-max-bs 256 \\\n"
        "  --kv-cache-dtype fp8_e4m3"
    )
    assert cmds["trtllm"].config_yaml == (
        "kv_cache_config:\n  dtype: fp8\ncuda_graph_config:\n  enable_padding: true\n  max_batch_size: 256\n"
    )
    expert_words = ("expert", "--ep", "ep_size", "eplb", "a2a", "moe_")
    for c in cmds.values():
        text = c.command + c.config_yaml
        assert not [w for w in expert_words if w in text], c.engine
    # a dense model with expert-parallel sizes set still gets no EP flag
    odd = LaunchSpec("meta-llama/Meta-Llama-3-70B-Instruct", attention_tp=8, ep=8, is_moe=False, redundant_experts=8)
    for c in launch_commands(odd).values():
        assert not [w for w in expert_words if w in c.command + c.config_yaml], c.engine


# ------------------------------------------------------------------ PP2 across two nodes, two replicas

PP2 = LaunchSpec("deepseek-ai/DeepSeek-V3", attention_tp=8, ep=8, pp=2, dp=2)

PP2_VLLM_NODE1 = r"""vllm serve deepseek-ai/DeepSeek-V3 \
  --tensor-parallel-size 8 \
  --pipeline-parallel-size 2 \
  --nnodes 2 \
  --node-rank 1 \
  --master-addr "$HEAD_IP" \
  --headless \
  --enable-expert-parallel \
  --max-num-batched-tokens 8192 \
  --max-num-seqs 256 \
  --max-cudagraph-capture-size 256"""


def test_pp2_over_two_nodes_and_two_replicas():
    cmds = launch_commands(PP2)
    vllm = cmds["vllm"].command
    assert vllm.endswith("# node 1 of 2\n" + PP2_VLLM_NODE1)
    assert '--node-rank 0 \\\n  --master-addr "$HEAD_IP" \\\n  --enable-expert-parallel' in vllm  # head: not headless
    assert tokens(vllm).count("--headless") == 1
    sg = cmds["sglang"].command
    assert (
        '--tp-size 8 \\\n  --pp-size 2 \\\n  --dist-init-addr "$HEAD_IP:5000" \\\n  --nnodes 2 \\\n  --node-rank 1'
        in sg
    )
    assert "--ep-size 8 \\\n  --moe-a2a-backend deepep" in sg
    assert cmds["trtllm"].command == (
        "# written for TensorRT-LLM 1.3.0rc27\n"
        "trtllm-serve deepseek-ai/DeepSeek-V3 \\\n"
        "  --tp_size 8 \\\n"
        "  --pp_size 2 \\\n"
        "  --ep_size 8 \\\n"
        "  --max_batch_size 256 \\\n"
        "  --max_num_tokens 8192 \\\n"
        "  --extra_llm_api_options extra_llm_api_options.yaml"
    )
    # dp = 2 replicas: said explicitly, the command itself sizes one replica (16 GPUs)
    for c in cmds.values():
        assert any(n.startswith("dp = 2: the command sizes one replica of 16 GPUs; run it 2 times") for n in c.notes)


def test_wider_than_two_nodes_uses_node_rank():
    spec = LaunchSpec("deepseek-ai/DeepSeek-V3", attention_dp=32, ep=32)
    vllm = launch_command(spec, "vllm").command
    assert "# nodes 1 to 3: run on each with NODE_RANK set to its index" in vllm
    assert '--data-parallel-start-rank "$((NODE_RANK * 8))" \\\n  --headless' in vllm
    sg = launch_command(spec, "sglang").command
    assert '--nnodes 4 \\\n  --node-rank "$NODE_RANK"' in sg


def test_uneven_node_split_is_said():
    spec = LaunchSpec("deepseek-ai/DeepSeek-V3", attention_tp=3, attention_dp=4, ep=12)  # 12 GPUs, nodes of 8
    v, s = launch_command(spec, "vllm"), launch_command(spec, "sglang")
    assert "--nnodes" not in v.command and any("does not split evenly" in n for n in v.notes)
    assert "--nnodes" not in s.command and any("do not fill whole nodes of 8" in n for n in s.notes)


# ---------------------------------------------------------------- a prefill / decode disaggregated pair

PREFILL = LaunchSpec(
    "deepseek-ai/DeepSeek-V3", attention_dp=8, ep=8, max_batched_tokens=16384, role="prefill", kv_cache_dtype="fp8"
)
DECODE = LaunchSpec(
    "deepseek-ai/DeepSeek-V3", attention_dp=8, ep=8, max_num_seqs=64, role="decode", kv_cache_dtype="fp8"
)


def test_prefill_decode_pair():
    p, d = launch_commands(PREFILL), launch_commands(DECODE)
    assert p["vllm"].command == (
        "# written for vLLM 0.33.0\n"
        "vllm serve deepseek-ai/DeepSeek-V3 \\\n"
        "  --tensor-parallel-size 1 \\\n"
        "  --data-parallel-size 8 \\\n"
        "  --enable-expert-parallel \\\n"
        "  --all2all-backend deepep_high_throughput \\\n"
        "  --max-num-batched-tokens 16384 \\\n"
        "  --max-num-seqs 256 \\\n"
        "  --kv-cache-dtype fp8 \\\n"
        """  --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}'"""
    )
    assert d["vllm"].command.endswith(
        """--kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'"""
    )
    # the decode worker runs DeepEP's low-latency kernels, the prefill worker its high-throughput ones (W2)
    assert "--all2all-backend deepep_low_latency" in d["vllm"].command
    assert p["sglang"].command == (
        "# written for SGLang 0.5.16\n"
        "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 \\\n"
        "  --tp-size 8 \\\n"
        "  --dp-size 8 \\\n"
        "  --enable-dp-attention \\\n"
        "  --moe-dense-tp-size 1 \\\n"
        "  --enable-dp-lm-head \\\n"
        "  --ep-size 8 \\\n"
        "  --moe-a2a-backend deepep \\\n"
        "  --deepep-mode normal \\\n"
        "  --chunked-prefill-size 131072 \\\n"
        "  --max-running-requests 2048 \\\n"
        "  --kv-cache-dtype fp8_e4m3 \\\n"
        "  --disaggregation-mode prefill \\\n"
        "  --disaggregation-transfer-backend nixl"
    )
    assert "--max-running-requests 512 \\\n  --cuda-graph-max-bs 64 \\\n" in d["sglang"].command
    # 64 sequences per rank, no speculation, no TBO: 64 tokens per rank in DeepEP's low-latency buffer
    assert d["sglang"].command.startswith(
        "# written for SGLang 0.5.16\nSGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK=64 "
    )
    assert "SGLANG_DEEPEP" not in p["sglang"].command and "--deepep-mode low_latency" in d["sglang"].command
    assert d["sglang"].command.endswith("--disaggregation-mode decode \\\n  --disaggregation-transfer-backend nixl")
    assert p["trtllm"].config_yaml == (
        "enable_attention_dp: true\n"
        "kv_cache_config:\n  dtype: fp8\n"
        "cuda_graph_config:\n  enable_padding: true\n  max_batch_size: 256\n"
        "cache_transceiver_config:\n  backend: NIXL\n"
        "disable_overlap_scheduler: true\n"
    )
    assert yaml.safe_load(d["trtllm"].config_yaml)["cache_transceiver_config"] == {"backend": "NIXL"}
    assert "disable_overlap_scheduler" not in d["trtllm"].config_yaml
    assert any("sglang_router.launch_router --pd-disaggregation" in n for n in p["sglang"].notes)
    assert any("trtllm-serve disaggregated -c disagg_config.yaml" in n for n in d["trtllm"].notes)
    assert any("toy_proxy_server.py" in n for n in p["vllm"].notes)


def test_speculative_methods_per_engine():
    eagle = LaunchSpec("meta-llama/Llama-3.1-8B-Instruct", speculative="eagle3", num_speculative_tokens=3, is_moe=False)
    c = launch_commands(eagle)
    assert """--speculative-config '{"method":"eagle3","model":"EAGLE3_DRAFT_MODEL","num_speculative_tokens":3}'""" in (
        c["vllm"].command
    )
    assert (
        "--speculative-algorithm EAGLE3 \\\n  --speculative-draft-model-path EAGLE3_DRAFT_MODEL \\\n"
        "  --speculative-num-steps 3 \\\n  --speculative-eagle-topk 1 \\\n  --speculative-num-draft-tokens 4"
    ) in c["sglang"].command
    assert yaml.safe_load(c["trtllm"].config_yaml)["speculative_config"] == {
        "decoding_type": "Eagle3",
        "max_draft_len": 3,
        "speculative_model": "EAGLE3_DRAFT_MODEL",
    }
    assert all(any("EAGLE3_DRAFT_MODEL stands for" in n for n in x.notes) for x in c.values())
    ngram = launch_commands(LaunchSpec("openai/gpt-oss-120b", speculative="ngram", num_speculative_tokens=4))
    assert """'{"method":"ngram","num_speculative_tokens":4}'""" in ngram["vllm"].command
    assert "--speculative-algorithm NGRAM \\\n  --speculative-num-draft-tokens 5" in ngram["sglang"].command
    assert "decoding_type: NGram\n  max_draft_len: 4\n" in ngram["trtllm"].config_yaml


def test_two_batch_overlap_per_engine():
    """Each engine's two-batch overlap setting as catalogs/engines.yaml names it (vLLM --enable-dbo, SGLang
    --enable-two-batch-overlap); TensorRT-LLM has none (its LLM API's settings, read in its llm_args.py: attention-DP
    balance, the host overlap scheduler, MoE backends; no two micro-batches), so the search scores no overlap for it
    (layouts review 3 M12) and a plan scored with overlap says so in its TensorRT-LLM command."""
    from core.serving.launch.spec import overlaps_two_batches

    c = launch_commands(LaunchSpec("deepseek-ai/DeepSeek-V3", attention_dp=8, ep=8, two_batch_overlap=True))
    for engine in ("vllm", "sglang"):
        assert ENGINES_YAML[engine]["two_batch_overlap"]["setting"] in tokens(c[engine].command)
    assert [tokens(c["vllm"].command).count("--enable-dbo"), c["sglang"].command.count("--enable-two-batch")] == [1, 1]
    assert ENGINES_YAML["trtllm"]["two_batch_overlap"] == {"setting": None, "source": "llm_args"}
    assert "llm_args.py" in ENGINES_YAML["trtllm"]["sources"]["llm_args"]
    assert {e: overlaps_two_batches(e) for e in ENGINES} == {"vllm": True, "sglang": True, "trtllm": False}
    assert any("two-batch overlap, which TensorRT-LLM does not have" in n for n in c["trtllm"].notes)
    with pytest.raises(ValueError, match="stack"):
        overlaps_two_batches("tgi")


def test_spec_from_plan_takes_the_layout():
    lay = ParallelLayout(attention_tp=2, attention_dp=4, ep=8, expert_tp=1, pp=2, dp=3)
    s = spec_from_plan("deepseek-ai/DeepSeek-V3", lay, redundant_experts=32, max_num_seqs=64, role="prefill")
    assert (s.attention_tp, s.attention_dp, s.ep, s.expert_tp, s.pp, s.dp) == (2, 4, 8, 1, 2, 3)
    assert (s.redundant_experts, s.max_num_seqs, s.role, s.max_batched_tokens, s.gpus_per_node) == (
        32,
        64,
        "prefill",
        8192,
        8,
    )
    with pytest.raises(ValueError, match="ParallelLayout"):
        spec_from_plan("deepseek-ai/DeepSeek-V3", {"attention_tp": 1})


# ------------------------------------------------------- every generated flag is documented, with a source


def test_engines_yaml_every_flag_has_a_source():
    assert set(ENGINES_YAML) == set(ENGINES)
    for engine, entry in ENGINES_YAML.items():
        assert entry["version"] and entry["name"], engine
        sources = entry["sources"]
        assert sources and all(isinstance(v, str) and len(v) > 20 for v in sources.values()), engine
        documented = {**entry["flags"], **entry.get("yaml_keys", {})}
        for flag, source in documented.items():
            assert source in sources, f"{engine} {flag}: source {source!r} is not among its sources"


LAYOUTS = [  # (attention_tp, attention_dp, ep, expert_tp, pp, dp)
    (1, 1, 1, 1, 1, 1),
    (8, 1, 1, 8, 1, 1),
    (8, 1, 8, 1, 1, 1),
    (1, 8, 8, 1, 1, 2),
    (2, 4, 2, 4, 1, 1),
    (1, 16, 16, 1, 1, 1),
    (1, 32, 32, 1, 1, 1),
    (8, 1, 8, 1, 2, 1),
    (4, 4, 4, 4, 2, 1),
    (3, 4, 12, 1, 1, 1),
    (16, 1, 16, 1, 1, 1),
]
VARIANTS = list(
    itertools.product(
        [None, "mtp", "eagle3", "ngram"], ["aggregated", "prefill", "decode"], [True, False], [0, 32], [8, 4]
    )
)


def all_commands():
    for (tp, adp, ep, etp, pp, dp), (spec_m, role, moe, red, gpn) in itertools.product(LAYOUTS, VARIANTS):
        spec = LaunchSpec(
            "deepseek-ai/DeepSeek-V3",
            attention_tp=tp,
            attention_dp=adp,
            ep=ep,
            expert_tp=etp,
            pp=pp,
            dp=dp,
            gpus_per_node=gpn,
            redundant_experts=red,
            kv_cache_dtype="fp8" if red else "auto",
            speculative=spec_m,
            num_speculative_tokens=2 if spec_m else 0,
            two_batch_overlap=moe,
            role=role,
            is_moe=moe,
        )
        yield from launch_commands(spec).values()
    # decode context parallelism (vLLM's flag; a note from the others)
    yield from launch_commands(LaunchSpec("deepseek-ai/DeepSeek-V3", attention_tp=8, ep=8, dcp=8)).values()
    # a checkpoint quantised on load, custom model code, the memory fractions; a decode batch whose DeepEP tokens
    # need more than the default chunk (256) and queue depth (1024 >= 2 x (511 + 1)): 400 x 2 = 800 tokens
    extra = dict(quantization="fp8", trust_remote_code=True, gpu_memory_utilization=0.9, mem_fraction_static=0.85)
    big = LaunchSpec(
        "Qwen/Qwen3-235B-A22B",
        attention_dp=8,
        ep=8,
        max_num_seqs=400,
        speculative="mtp",
        num_speculative_tokens=1,
        role="decode",
        free_gpu_memory_fraction=0.7,
        **extra,
    )
    yield from launch_commands(big).values()
    # a hybrid model whose recurrent state the deployment stores in bf16 (Precision.linear_state)
    yield from launch_commands(QWEN35_BF16_STATE).values()


# Qwen3.5-397B on 8 GPUs at TP8 with its Gated DeltaNet state in bf16, as the vLLM blog 2026-08-06 and InferenceX's
# SGLang recipes run it
QWEN35_BF16_STATE = LaunchSpec("Qwen/Qwen3.5-397B-A17B-FP8", attention_tp=8, expert_tp=8, linear_state="bf16")


def test_a_bf16_recurrent_state_is_written_for_every_engine():
    cmds = launch_commands(QWEN35_BF16_STATE)
    assert "--mamba-ssm-cache-dtype bfloat16" in cmds["vllm"].command
    assert "--mamba-ssm-dtype bfloat16" in cmds["sglang"].command
    assert yaml.safe_load(cmds["trtllm"].config_yaml)["kv_cache_config"]["mamba_ssm_cache_dtype"] == "bfloat16"
    # the checkpoint's state (no override): no flag, no key
    plain = launch_commands(dataclasses.replace(QWEN35_BF16_STATE, linear_state=None))
    assert "mamba" not in plain["vllm"].command + plain["sglang"].command + plain["trtllm"].config_yaml
    with pytest.raises(ValueError, match="linear_state"):
        dataclasses.replace(QWEN35_BF16_STATE, linear_state="fp8")


def test_every_generated_flag_and_yaml_key_is_documented():
    seen: dict[str, set[str]] = {e: set() for e in ENGINES}
    for c in all_commands():
        documented = set(ENGINES_YAML[c.engine]["flags"])
        used = {t for t in tokens(c.command) if t.startswith("--")}
        assert used <= documented, f"{c.engine} uses undocumented flags {used - documented}"
        env = {t.split("=")[0] for t in tokens(c.command) if "=" in t and t.split("=")[0].isupper()}
        assert env <= set(ENGINES_YAML[c.engine].get("env", {})), f"{c.engine} undocumented env {env}"
        used |= {f"env:{e}" for e in env}
        keys = set(yaml.safe_load(c.config_yaml) or {})
        assert keys <= set(ENGINES_YAML[c.engine].get("yaml_keys", {})), keys
        assert set(c.flags) == used | {f"yaml:{k}" for k in keys}
        assert c.version == ENGINES_YAML[c.engine]["version"]
        assert c.command.startswith(f"# written for {ENGINES_YAML[c.engine]['name']} {c.version}\n")
        assert all(isinstance(n, str) and n.endswith(".") for n in c.notes)
        seen[c.engine] |= used | {f"yaml:{k}" for k in keys}
    # and the lists hold nothing the generator never writes
    for engine, entry in ENGINES_YAML.items():
        listed = set(entry["flags"]) | {f"yaml:{k}" for k in entry.get("yaml_keys", {})}
        listed |= {f"env:{k}" for k in entry.get("env", {})}
        assert listed == seen[engine], f"{engine}: listed but never written {listed - seen[engine]}"


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_commands_are_valid_shell():
    """bash -n parses every generated command (a quoting slip would be a syntax error)."""
    script = "\n\n".join(c.command for c in itertools.islice(all_commands(), 0, None, 7))
    r = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr[-2000:]


def test_json_arguments_are_single_quoted_and_parse():
    c = launch_command(DSV3_DECODE, "vllm")
    words = tokens(c.command)
    for flag in ("--eplb-config", "--speculative-config", "--kv-transfer-config"):
        value = words[words.index(flag) + 1]
        assert isinstance(json.loads(value), dict)
        assert f"{flag} '{value}'" in c.command


# ------------------------------------------------------------------------------------ bad specs refused


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(attention_tp=2, attention_dp=4, ep=4, expert_tp=1), r"attention_tp x attention_dp \(8\) must equal"),
        (dict(role="router"), "role 'router' is not one of: aggregated, prefill, decode"),
        (dict(attention_tp=-1), "attention_tp must be a whole number"),
        (dict(max_num_seqs=0), "max_num_seqs must be a whole number"),
        (dict(redundant_experts=-8), "redundant_experts must be a whole number"),
        (dict(pp=2.0), "pp must be a whole number"),
        (dict(dp=True), "dp must be a whole number"),
        (dict(gpus_per_node=10**30), "gpus_per_node must be a whole number"),
        (dict(kv_cache_dtype="fp16"), "kv_cache_dtype 'fp16' is not one of: auto, fp8"),
        (dict(speculative="medusa", num_speculative_tokens=2), "speculative 'medusa' is not one of"),
        (dict(speculative="mtp"), "needs num_speculative_tokens"),
        (dict(num_speculative_tokens=3), "must be 0 when speculative is None"),
        (dict(two_batch_overlap="yes"), "two_batch_overlap must be true or false"),
        (dict(is_moe=1), "is_moe must be true or false"),
        (dict(attention_tp=1024, ep=1, expert_tp=1024, pp=128), "one replica would use 131,072 GPUs; at most 65,536"),
        (dict(attention_tp=8, ep=8, dp=8193), "8,193 replicas of 8 GPUs would use 65,544 GPUs; at most 65,536"),
        (dict(dp=65_537), r"dp must be a whole number in 1\.\.65,536"),
        (dict(gpus_per_node=1025), r"gpus_per_node must be a whole number in 1\.\.1,024"),
        (dict(redundant_experts=100_001), r"redundant_experts must be a whole number in 0\.\.100,000"),
    ],
)
def test_bad_spec_is_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LaunchSpec("deepseek-ai/DeepSeek-V3", **kwargs)


@pytest.mark.parametrize(
    "model_id",
    [
        "",
        "deepseek ai/DeepSeek-V3",
        "deepseek-ai/DeepSeek-V3; rm -rf ~",
        "x'y",
        'x"y',
        "a`id`",
        "$(id)",
        "a&&b",
        "a|b",
        "a\nb",
        "-rf",
        "--help",
        "x" * 201,
        "ｄeepseek",
        None,
        42,
    ],
)
def test_model_id_cannot_inject_shell_syntax(model_id):
    with pytest.raises(ValueError, match="model_id"):
        LaunchSpec(model_id)


def test_good_model_ids_reach_the_command_as_one_word():
    for mid in ("deepseek-ai/DeepSeek-V3", "Qwen/Qwen3-235B-A22B-Instruct-2507", "./local/model_v1.5", "/models/x"):
        for c in launch_commands(LaunchSpec(mid)).values():
            words = tokens(c.command)
            assert mid in words and words.count(mid) == 1


def test_launch_command_refuses_unknown_engine_and_non_spec():
    with pytest.raises(ValueError, match="engine 'ollama' is not one of: vllm, sglang, trtllm"):
        launch_command(LaunchSpec("openai/gpt-oss-120b"), "ollama")
    with pytest.raises(ValueError, match="LaunchSpec"):
        launch_command({"model_id": "openai/gpt-oss-120b"}, "vllm")
    assert isinstance(launch_command(LaunchSpec("openai/gpt-oss-120b"), "vllm"), LaunchCommand)
