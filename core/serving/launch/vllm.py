"""``vllm serve`` for a launch spec: the command block(s), one per node of a multi-node replica."""

from __future__ import annotations

from core.serving.launch.spec import (
    EAGLE3_DRAFT,
    TORCH_DTYPE,
    Args,
    LaunchSpec,
    env_prefix,
    json_arg,
    nvshmem_env,
    per_node,
    render,
)

__all__: list[str] = []  # the writer the package face calls; launch_command is the API

VLLM_DP_CHUNK = 256  # vllm/envs.py VLLM_MOE_DP_CHUNK_SIZE default: tokens a DP rank dispatches per MoE chunk


def _expert_args(s: LaunchSpec, notes: list[str], env: dict[str, int]) -> Args:
    """Expert parallelism, its all-to-all backend (the planner times vLLM's EP on DeepEP: high-throughput kernels
    for prefill, low-latency for decode), EPLB and dual-batch overlap (DeepEP only)."""
    stage, out = s.gpus_per_stage, []
    deepep = s.is_moe and s.ep > 1 and s.attention_dp > 1  # vLLM's all-to-all kernels need data parallel > 1
    if s.is_moe and s.ep > 1:
        out.append(("--enable-expert-parallel", None))
        if s.expert_tp > 1:
            notes.append(
                f"vLLM cannot run a mixed expert TP x EP layout (expert TP {s.expert_tp} x EP {s.ep}): with "
                f"--enable-expert-parallel its EP size is TP x DP = {stage}; the nearest layout, written here, is "
                f"EP {stage} without expert TP."
            )
        if deepep:
            backend = "deepep_low_latency" if s.decodes else "deepep_high_throughput"
            out.append(("--all2all-backend", backend))
            if s.role == "aggregated":
                notes.append(
                    f"vLLM runs one all-to-all backend for both phases: {backend} is written for the plan's {s.phase} "
                    "phase (the planner times vLLM's expert parallelism on DeepEP); the other phase's batches run on it too."
                )
            if s.decodes:
                tokens = s.dispatch_tokens_per_rank
                env.update({"VLLM_MOE_DP_CHUNK_SIZE": tokens} if tokens > VLLM_DP_CHUNK else {})
                env.update(nvshmem_env(tokens))
        else:
            notes.append(
                "vLLM's expert parallelism inside one tensor-parallel group (data parallel 1) uses no all-to-all kernel "
                "(vLLM's fused-MoE use_all2all_kernels needs data parallel > 1): no --all2all-backend is written."
            )
        if s.redundant_experts:
            out += [
                ("--enable-eplb", None),
                ("--eplb-config", json_arg({"num_redundant_experts": s.redundant_experts})),
            ]
    elif s.is_moe and s.redundant_experts:
        notes.append("vLLM's EPLB needs expert parallelism: with EP 1 the redundant experts are left out.")
    if s.two_batch_overlap:
        if deepep:
            out.append(("--enable-dbo", None))
        else:
            notes.append("vLLM's dual-batch overlap runs only with a DeepEP all-to-all: --enable-dbo is left out.")
    return out


def vllm_blocks(s: LaunchSpec, notes: list[str]) -> list[str]:
    engine_gpus = s.attention_tp * s.pp
    par: Args = [("--tensor-parallel-size", str(s.attention_tp))]
    par += [("--pipeline-parallel-size", str(s.pp))] if s.pp > 1 else []
    par += [("--data-parallel-size", str(s.attention_dp))] if s.attention_dp > 1 else []
    par += [("--decode-context-parallel-size", str(s.dcp))] if s.dcp > 1 else []
    env: dict[str, int] = {}
    rest = _expert_args(s, notes, env)
    rest += [("--max-num-batched-tokens", str(s.max_batched_tokens)), ("--max-num-seqs", str(s.max_num_seqs))]
    if s.decodes:  # CUDA graphs are captured by token count: every decode step of the plan's batch replays one
        rest.append(("--max-cudagraph-capture-size", str(s.max_num_seqs * (1 + s.num_speculative_tokens))))
    rest += [("--kv-cache-dtype", "fp8")] if s.kv_cache_dtype == "fp8" else []
    rest += [("--mamba-ssm-cache-dtype", TORCH_DTYPE[s.linear_state])] if s.linear_state else []
    rest += [("--gpu-memory-utilization", f"{s.gpu_memory_utilization:g}")] if s.gpu_memory_utilization else []
    rest += [("--quantization", s.quantization)] if s.quantization else []
    rest += [("--trust-remote-code", None)] if s.trust_remote_code else []
    if s.speculative:
        draft = {"model": EAGLE3_DRAFT} if s.speculative == "eagle3" else {}
        spec = {"method": s.speculative, **draft, "num_speculative_tokens": s.num_speculative_tokens}
        rest.append(("--speculative-config", json_arg(spec)))
    if s.role != "aggregated":
        kv_role = "kv_producer" if s.role == "prefill" else "kv_consumer"
        rest.append(("--kv-transfer-config", json_arg({"kv_connector": "NixlConnector", "kv_role": kv_role})))
    head, world, gpn = f"{env_prefix(env)}vllm serve {s.model_id}", s.gpus_per_replica, s.gpus_per_node
    if world <= gpn:
        return [render(head, par + rest)]
    if s.attention_dp > 1 and gpn % engine_gpus == 0 and world % gpn == 0:
        local = gpn // engine_gpus
        base: Args = [
            ("--data-parallel-size-local", str(local)),
            ("--data-parallel-address", '"$HEAD_IP"'),
            ("--data-parallel-rpc-port", "13345"),
        ]

        def dp_node(rank: str, index: int | None) -> str:
            if rank == "0":
                return render(head, par + base + rest)
            start = str(index * local) if index is not None else f'"$((NODE_RANK * {local}))"'
            return render(head, [*par, *base, ("--data-parallel-start-rank", start), ("--headless", None), *rest])

        return per_node(s, world // gpn, dp_node, notes)
    if s.attention_dp == 1 and world % gpn == 0:

        def tp_node(rank: str, index: int | None) -> str:
            mn: Args = [("--nnodes", str(world // gpn)), ("--node-rank", rank), ("--master-addr", '"$HEAD_IP"')]
            return render(head, par + mn + ([] if rank == "0" else [("--headless", None)]) + rest)

        return per_node(s, world // gpn, tp_node, notes)
    notes.append(
        f"This layout does not split evenly over nodes of {gpn} GPUs for vLLM (each DP engine holds TP x PP = "
        f"{engine_gpus} GPUs): the single-node command is written; a DP engine spanning nodes needs "
        "--data-parallel-backend ray on a Ray cluster."
    )
    return [render(head, par + rest)]
