"""``vllm serve`` for a launch spec: the command block(s), one per node of a multi-node replica."""

from __future__ import annotations

from core.serving.launch.spec import EAGLE3_DRAFT, Args, LaunchSpec, json_arg, per_node, render

__all__: list[str] = []  # the writer the package face calls; launch_command is the API


def vllm_blocks(s: LaunchSpec, notes: list[str]) -> list[str]:
    stage, engine_gpus = s.gpus_per_stage, s.attention_tp * s.pp
    par: Args = [("--tensor-parallel-size", str(s.attention_tp))]
    par += [("--pipeline-parallel-size", str(s.pp))] if s.pp > 1 else []
    par += [("--data-parallel-size", str(s.attention_dp))] if s.attention_dp > 1 else []
    par += [("--decode-context-parallel-size", str(s.dcp))] if s.dcp > 1 else []
    rest: Args = []
    if s.is_moe and s.ep > 1:
        rest.append(("--enable-expert-parallel", None))
        if s.expert_tp > 1:
            notes.append(
                f"vLLM cannot run a mixed expert TP x EP layout (expert TP {s.expert_tp} x EP {s.ep}): with "
                f"--enable-expert-parallel its EP size is TP x DP = {stage}; the nearest layout, written here, is "
                f"EP {stage} without expert TP."
            )
        if s.redundant_experts:
            rest += [
                ("--enable-eplb", None),
                ("--eplb-config", json_arg({"num_redundant_experts": s.redundant_experts})),
            ]
    elif s.is_moe and s.redundant_experts:
        notes.append("vLLM's EPLB needs expert parallelism: with EP 1 the redundant experts are left out.")
    rest += [("--enable-dbo", None)] if s.two_batch_overlap else []
    rest += [("--max-num-batched-tokens", str(s.max_batched_tokens)), ("--max-num-seqs", str(s.max_num_seqs))]
    rest += [("--kv-cache-dtype", "fp8")] if s.kv_cache_dtype == "fp8" else []
    if s.speculative:
        draft = {"model": EAGLE3_DRAFT} if s.speculative == "eagle3" else {}
        spec = {"method": s.speculative, **draft, "num_speculative_tokens": s.num_speculative_tokens}
        rest.append(("--speculative-config", json_arg(spec)))
    if s.role != "aggregated":
        kv_role = "kv_producer" if s.role == "prefill" else "kv_consumer"
        rest.append(("--kv-transfer-config", json_arg({"kv_connector": "NixlConnector", "kv_role": kv_role})))
    head, world, gpn = f"vllm serve {s.model_id}", s.gpus_per_replica, s.gpus_per_node
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
