"""``python -m sglang.launch_server`` for a launch spec: the command block(s), one per node of a multi-node replica."""

from __future__ import annotations

from core.serving.launch.spec import (
    EAGLE3_DRAFT,
    TORCH_DTYPE,
    Args,
    LaunchSpec,
    env_prefix,
    nvshmem_env,
    per_node,
    render,
)

__all__: list[str] = []  # the writer the package face calls; launch_command is the API

DEEPEP_DEFAULT_TOKENS = 128  # sglang environ.py SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK = EnvInt(128)


def _dp_attention(s: LaunchSpec, notes: list[str]) -> Args:
    notes.append(
        f"SGLang's --chunked-prefill-size and --max-running-requests are totals split over the {s.attention_dp} "
        f"attention-DP ranks ({s.max_batched_tokens} tokens and {s.max_num_seqs} sequences each). SGLang 0.5.23 "
        f"spells --dp-size {s.attention_dp} --enable-dp-attention as --attn-dp-size {s.attention_dp}."
    )
    # the planner splits a dense FFN layer over attention TP only: SGLang runs it per DP rank only with
    # --moe-dense-tp-size 1 (layers/communicator.py enable_moe_dense_fully_dp); otherwise TP over the whole group
    if s.attention_tp > 1:
        notes.append(
            f"--moe-dense-tp-size 1 keeps whole dense-MLP weights on every GPU (SGLang takes 1 or the full TP); the "
            f"plan splits them over attention TP {s.attention_tp}, so each GPU holds a little more than planned."
        )
    return [("--enable-dp-attention", None), ("--moe-dense-tp-size", "1"), ("--enable-dp-lm-head", None)]


def _expert_args(s: LaunchSpec, notes: list[str], env: dict[str, int]) -> Args:
    out: Args = []
    if s.is_moe and s.ep > 1:
        out.append(("--ep-size", str(s.ep)))
        if s.expert_tp == 1:  # deepep sets EP = the whole TP group
            out.append(("--moe-a2a-backend", "deepep"))
            if s.role != "aggregated":  # auto: low_latency for decode batches, normal for prefill ones
                out.append(("--deepep-mode", "normal" if s.role == "prefill" else "low_latency"))
            if s.decodes:
                tokens = s.dispatch_tokens_per_rank
                env["SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK"] = tokens
                env.update(nvshmem_env(tokens))
                n = 1 + s.num_speculative_tokens
                per = f"{s.max_num_seqs} sequences x {n} token{'s' if n > 1 else ''} each"
                per += " / 2 micro-batches" if s.two_batch_overlap else ""
                notes.append(
                    f"DeepEP's low-latency buffer is sized for the plan's {tokens} tokens per rank per decode "
                    f"micro-batch ({per}); SGLang's default is {DEEPEP_DEFAULT_TOKENS}."
                )
        if s.redundant_experts:
            out += [("--enable-eplb", None), ("--ep-num-redundant-experts", str(s.redundant_experts))]
    elif s.is_moe and s.redundant_experts:
        notes.append("SGLang's redundant experts need expert parallelism: with EP 1 they are left out.")
    return out


def _speculative_args(s: LaunchSpec, dp_attn: bool, notes: list[str]) -> Args:
    n = s.num_speculative_tokens
    if s.speculative == "ngram":
        if dp_attn:
            notes.append("SGLang's NGRAM speculative decoding does not support DP attention: the server refuses it.")
        return [("--speculative-algorithm", "NGRAM"), ("--speculative-num-draft-tokens", str(n + 1))]
    if not s.speculative:
        return []
    algo: Args = [("--speculative-algorithm", "EAGLE")]  # DeepSeek-style MTP runs as EAGLE in SGLang
    if s.speculative == "eagle3":
        algo = [("--speculative-algorithm", "EAGLE3"), ("--speculative-draft-model-path", EAGLE3_DRAFT)]
    steps: Args = [("--speculative-num-steps", str(n)), ("--speculative-eagle-topk", "1")]
    return [*algo, *steps, ("--speculative-num-draft-tokens", str(n + 1))]


def sglang_blocks(s: LaunchSpec, notes: list[str]) -> list[str]:
    dp_attn = s.is_moe and s.attention_dp > 1  # dense + attention DP: --dp-size replicas inside the server
    tp = s.gpus_per_stage if (s.is_moe or s.attention_dp == 1) else s.attention_tp
    scale = s.attention_dp if dp_attn else 1
    par: Args = [("--tp-size", str(tp))]
    par += [("--pp-size", str(s.pp))] if s.pp > 1 else []
    par += [("--dp-size", str(s.attention_dp))] if s.attention_dp > 1 else []
    par += _dp_attention(s, notes) if dp_attn else []
    env: dict[str, int] = {}
    rest = _expert_args(s, notes, env)
    rest += [("--enable-two-batch-overlap", None)] if s.two_batch_overlap else []
    rest += [
        ("--chunked-prefill-size", str(s.max_batched_tokens * scale)),
        ("--max-running-requests", str(s.max_num_seqs * scale)),
    ]
    rest += [("--cuda-graph-max-bs", str(s.max_num_seqs))] if s.decodes else []  # per rank, as the buffer above
    rest += [("--kv-cache-dtype", "fp8_e4m3")] if s.kv_cache_dtype == "fp8" else []
    rest += [("--mamba-ssm-dtype", TORCH_DTYPE[s.linear_state])] if s.linear_state else []
    rest += [("--mem-fraction-static", f"{s.mem_fraction_static:g}")] if s.mem_fraction_static else []
    rest += [("--quantization", s.quantization)] if s.quantization else []
    rest += [("--trust-remote-code", None)] if s.trust_remote_code else []
    rest += _speculative_args(s, dp_attn, notes)
    if s.role != "aggregated":
        rest += [("--disaggregation-mode", s.role), ("--disaggregation-transfer-backend", "nixl")]
    head = f"{env_prefix(env)}python -m sglang.launch_server --model-path {s.model_id}"
    world, gpn = s.gpus_per_replica, s.gpus_per_node
    if world <= gpn or world % gpn:
        if world > gpn:
            notes.append(f"{world} GPUs do not fill whole nodes of {gpn}: only the single-node command is written.")
        return [render(head, par + rest)]

    def node(rank: str, index: int | None) -> str:
        mn: Args = [("--dist-init-addr", '"$HEAD_IP:5000"'), ("--nnodes", str(world // gpn)), ("--node-rank", rank)]
        return render(head, par + mn + rest)

    return per_node(s, world // gpn, node, notes)
