"""``python -m sglang.launch_server`` for a launch spec: the command block(s), one per node of a multi-node replica."""

from __future__ import annotations

from core.serving.launch.spec import EAGLE3_DRAFT, Args, LaunchSpec, per_node, render

__all__: list[str] = []  # the writer the package face calls; launch_command is the API


def sglang_blocks(s: LaunchSpec, notes: list[str]) -> list[str]:
    dp_attn = s.is_moe and s.attention_dp > 1  # dense + attention DP: --dp-size replicas inside the server
    tp = s.gpus_per_stage if (s.is_moe or s.attention_dp == 1) else s.attention_tp
    scale, n = (s.attention_dp if dp_attn else 1), s.num_speculative_tokens
    par: Args = [("--tp-size", str(tp))]
    par += [("--pp-size", str(s.pp))] if s.pp > 1 else []
    par += [("--dp-size", str(s.attention_dp))] if s.attention_dp > 1 else []
    if dp_attn:
        par.append(("--enable-dp-attention", None))
        notes.append(
            f"SGLang's --chunked-prefill-size and --max-running-requests are totals split over the {s.attention_dp} "
            f"attention-DP ranks ({s.max_batched_tokens} tokens and {s.max_num_seqs} sequences each). SGLang 0.5.23 "
            f"spells --dp-size {s.attention_dp} --enable-dp-attention as --attn-dp-size {s.attention_dp}."
        )
    rest: Args = []
    if s.is_moe and s.ep > 1:
        rest.append(("--ep-size", str(s.ep)))
        rest += [("--moe-a2a-backend", "deepep")] if s.expert_tp == 1 else []  # deepep sets EP = the whole TP group
        if s.redundant_experts:
            rest += [("--enable-eplb", None), ("--ep-num-redundant-experts", str(s.redundant_experts))]
    elif s.is_moe and s.redundant_experts:
        notes.append("SGLang's redundant experts need expert parallelism: with EP 1 they are left out.")
    rest += [("--enable-two-batch-overlap", None)] if s.two_batch_overlap else []
    rest += [
        ("--chunked-prefill-size", str(s.max_batched_tokens * scale)),
        ("--max-running-requests", str(s.max_num_seqs * scale)),
    ]
    rest += [("--kv-cache-dtype", "fp8_e4m3")] if s.kv_cache_dtype == "fp8" else []
    if s.speculative == "ngram":
        rest += [("--speculative-algorithm", "NGRAM"), ("--speculative-num-draft-tokens", str(n + 1))]
        if dp_attn:
            notes.append("SGLang's NGRAM speculative decoding does not support DP attention: the server refuses it.")
    elif s.speculative:
        algo: Args = [("--speculative-algorithm", "EAGLE")]  # DeepSeek-style MTP runs as EAGLE in SGLang
        if s.speculative == "eagle3":
            algo = [("--speculative-algorithm", "EAGLE3"), ("--speculative-draft-model-path", EAGLE3_DRAFT)]
        steps: Args = [("--speculative-num-steps", str(n)), ("--speculative-eagle-topk", "1")]
        rest += [*algo, *steps, ("--speculative-num-draft-tokens", str(n + 1))]
    if s.role != "aggregated":
        rest += [("--disaggregation-mode", s.role), ("--disaggregation-transfer-backend", "nixl")]
    head, world, gpn = f"python -m sglang.launch_server --model-path {s.model_id}", s.gpus_per_replica, s.gpus_per_node
    if world <= gpn or world % gpn:
        if world > gpn:
            notes.append(f"{world} GPUs do not fill whole nodes of {gpn}: only the single-node command is written.")
        return [render(head, par + rest)]

    def node(rank: str, index: int | None) -> str:
        mn: Args = [("--dist-init-addr", '"$HEAD_IP:5000"'), ("--nnodes", str(world // gpn)), ("--node-rank", rank)]
        return render(head, par + mn + rest)

    return per_node(s, world // gpn, node, notes)
