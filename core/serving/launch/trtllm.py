"""``trtllm-serve`` for a launch spec: the command block(s) and the ``--extra_llm_api_options`` YAML."""

from __future__ import annotations

import dataclasses

from core.serving.launch.spec import EAGLE3_DRAFT, TORCH_DTYPE, TRTLLM_YAML, Args, LaunchSpec, render

__all__: list[str] = []  # the writer the package face calls; launch_command is the API


def trtllm_layout(s: LaunchSpec) -> LaunchSpec:
    """The layout TensorRT-LLM launches for ``s``: its attention DP runs attention at TP 1 on every GPU of the group,
    so an MoE's attention TP x DP (both above 1) becomes attention DP over the stage's GPUs (limits unchanged: the
    caller sizes them for it, :func:`core.serving.plan_commands.plan_commands`); any other spec as it is."""
    if s.is_moe and s.attention_dp > 1 and s.attention_tp > 1:
        return dataclasses.replace(s, attention_tp=1, attention_dp=s.gpus_per_stage, dcp=1)
    return s


def trtllm_blocks(s: LaunchSpec, notes: list[str]) -> tuple[list[str], dict]:
    stage, n = s.gpus_per_stage, s.num_speculative_tokens
    tp = stage if (s.is_moe or s.attention_dp == 1) else s.attention_tp
    args: Args = [("--tp_size", str(tp))] + ([("--pp_size", str(s.pp))] if s.pp > 1 else [])
    cfg: dict = {}
    if s.is_moe and s.attention_dp > 1:
        cfg["enable_attention_dp"] = True
        if s.role == "aggregated":
            notes.append(
                "Prompts and decodes share these attention-DP ranks: the planner scores a step carrying a prompt chunk "
                "at the busiest rank's pace (1.54x at 8 ranks, TensorRT-LLM tech blog 10's measurement of the "
                "round-robin scheduling this command starts). attention_dp_config: {enable_balance: true, "
                "timeout_iters: 50, batching_wait_iters: 0} held each rank's prompts until all had one and ran the "
                "blog's DeepSeek-V3 1.31x faster, at the cost of first tokens waiting: add it where the TTFT target "
                "allows (the plan does not score it)."
            )
        if s.attention_tp > 1:
            notes.append(
                f"TensorRT-LLM's attention DP runs attention at TP 1 on every GPU of the {stage}-GPU group: "
                f"attention TP {s.attention_tp} x DP {s.attention_dp} is not expressible; the nearest layout, written "
                f"here, is attention DP {stage}."
            )
    elif s.attention_dp > 1:
        notes.append(
            f"TensorRT-LLM has no in-server data parallelism for a dense model: run this command {s.attention_dp} "
            f"times (once per attention-DP rank), each on its own {tp * s.pp} GPUs."
        )
    if s.is_moe and s.ep > 1:
        args.append(("--ep_size", str(s.ep)))
        if s.expert_tp > 1:
            cfg["moe_tensor_parallel_size"] = s.expert_tp
        if s.redundant_experts:
            notes.append(
                "TensorRT-LLM sets redundant experts as slots: add moe_config: load_balancer: num_slots: <routed "
                f"experts + {s.redundant_experts}>, layer_updates_per_iter: 1 to the YAML (the spec carries no expert "
                "count)."
            )
    elif s.is_moe and s.redundant_experts:
        notes.append("TensorRT-LLM's expert load balancer needs expert parallelism: with EP 1 it is left out.")
    args += [("--max_batch_size", str(s.max_num_seqs)), ("--max_num_tokens", str(s.max_batched_tokens))]
    args.append(("--extra_llm_api_options", TRTLLM_YAML))
    kv: dict = {"dtype": "fp8"} if s.kv_cache_dtype == "fp8" else {}
    kv.update({"free_gpu_memory_fraction": s.free_gpu_memory_fraction} if s.free_gpu_memory_fraction else {})
    kv.update({"mamba_ssm_cache_dtype": TORCH_DTYPE[s.linear_state]} if s.linear_state else {})
    if kv:
        cfg["kv_cache_config"] = kv
    cfg["cuda_graph_config"] = {"enable_padding": True, "max_batch_size": s.max_num_seqs}
    if s.speculative == "mtp":
        cfg["speculative_config"] = {"decoding_type": "MTP", "num_nextn_predict_layers": n}
    elif s.speculative == "eagle3":
        cfg["speculative_config"] = {"decoding_type": "Eagle3", "max_draft_len": n, "speculative_model": EAGLE3_DRAFT}
    elif s.speculative == "ngram":
        cfg["speculative_config"] = {"decoding_type": "NGram", "max_draft_len": n}
    if s.trust_remote_code:
        cfg["trust_remote_code"] = True
    if s.quantization:
        notes.append(
            f"TensorRT-LLM does not quantise on load: this loads the checkpoint as stored, not {s.quantization}; "
            "quantise it offline with NVIDIA Model Optimizer (TensorRT-LLM's 'Running Pre-quantized Models')."
        )
    if s.role != "aggregated":
        cfg["cache_transceiver_config"] = {"backend": "NIXL"}
        cfg.update({"disable_overlap_scheduler": True} if s.role == "prefill" else {})
    if s.two_batch_overlap:
        notes.append(
            "The plan is scored with two-batch overlap, which TensorRT-LLM does not have (no LLM API setting splits a "
            "step into two micro-batches; its overlap scheduler prepares the next batch on the host): expect the "
            "plan's time without overlap. The TensorRT-LLM stack's own plans are scored without it."
        )
    if tp * s.pp > s.gpus_per_node:
        notes.append(
            f"One server ({tp * s.pp} GPUs) spans nodes of {s.gpus_per_node}: launch it under Slurm or MPI with one "
            "task per GPU through trtllm-llmapi-launch (srun ... trtllm-llmapi-launch trtllm-serve ...)."
        )
    notes.append(f"Save config_yaml as {TRTLLM_YAML} in the directory the command runs in.")
    return [render(f"trtllm-serve {s.model_id}", args)], cfg
