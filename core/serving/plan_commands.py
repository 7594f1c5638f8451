"""Engine launch commands for a ranked plan: the scenario's model, precision and speculative method on the
plan's layout and operating point (:mod:`core.serving.launch` writes each engine's flags).

The plan's operating point sets the limits: in decode, the sequences each attention-DP rank holds
(``--max-num-seqs`` / ``--max-running-requests`` / ``max_batch_size``, the CUDA-graph batch) and enough batched
tokens for them (and their draft tokens, which also size DeepEP's dispatch buffer); in prefill, the prompt chunk
of each rank (``--max-num-batched-tokens`` / ``--chunked-prefill-size`` / ``max_num_tokens``). The checkpoint is
the one published for the planned precision (``catalogs/checkpoints.yaml``), and the memory fractions come from
the scenario's memory assumptions (``MemoryAssumptions``) on the plan's GPU.
"""

from __future__ import annotations

import dataclasses
import math
import re

from core import memory
from core.deployment.bundle import Deployment
from core.deployment.specs import ParallelLayout, SpecDecodeConfig, Workload
from core.serving.launch import LaunchCommand, launch_command, launch_commands, spec_from_plan
from core.serving.launch.checkpoints import checkpoint_for
from core.serving.launch.trtllm import trtllm_layout
from core.serving.operating_point import Plan, unspeculated

__all__ = ["SPEC_LAUNCH_METHODS", "plan_commands"]

# the planner's speculative methods the launch commands write (EAGLE-family heads as EAGLE-3)
SPEC_LAUNCH_METHODS = {"mtp": "mtp", "eagle3": "eagle3", "eagle": "eagle3", "p_eagle": "eagle3", "ngram": "ngram"}
MODEL_PLACEHOLDER = "path/to/model"
_REPO_ID = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_./-]{0,199}")
# a plan that carries its own speculative scoring names the draft tokens it counted under one of these
_PLAN_SPEC_FIELDS = ("num_speculative_tokens", "draft_tokens", "speculative_tokens")


_UNITS = {"decode": "sequences per GPU", "prefill": "prompt tokens per GPU per step"}  # what a plan's tokens_per_gpu is


def _number(x: float) -> str:
    """A count with thousands separators, to a tenth where it is not whole (80.5, 24,576)."""
    return f"{x:,.0f}" if abs(x - round(x)) < 0.05 else f"{x:,.1f}"


def _fractions(lay: ParallelLayout, d: Deployment, speculate: bool) -> tuple[dict, list[str]]:
    """The engines' memory fractions from ``d``'s memory assumptions on its GPU (the planner's budget: usable =
    gpu_memory_utilization x memory; weights, activations and a runtime reserve come off it, the rest is KV cache),
    on layout ``lay``, with ``d``'s speculative config where the commands carry it (``speculate``). vLLM takes
    the utilisation itself; SGLang's static fraction holds weights + KV pool; TensorRT-LLM's is the KV share of what
    is left after weights and buffers."""
    a, gpu = d.assumptions, d.gpu
    out: dict = {"gpu_memory_utilization": a.gpu_memory_utilization}
    try:
        # the scenario's redundant-expert slots (the assumptions'), as the budget has always sized them here
        spec = d.spec if speculate else SpecDecodeConfig()
        r = memory.per_gpu_memory(d.with_(layout=lay, spec=spec, draft=None), Workload(batch=1))
    except ValueError as e:
        return out, [f"SGLang's and TensorRT-LLM's memory fractions are left at the engines' defaults: {e}."]
    buffers = r.components.get("activations", 0.0) + r.components.get("runtime_reserve", 0.0)
    static = (r.usable_bytes - buffers) / r.capacity_bytes
    after_weights = r.capacity_bytes - r.weights_bytes - buffers
    if 0 < static <= 1:
        out["mem_fraction_static"] = math.floor(static * 1000) / 1000
    if r.kv_budget_bytes > 0 and after_weights > 0:
        out["free_gpu_memory_fraction"] = max(
            0.001, math.floor(min(1.0, r.kv_budget_bytes / after_weights) * 1000) / 1000
        )
    note = (
        f"Memory fractions from the scenario's assumptions on {gpu.name}: gpu_memory_utilization "
        f"{a.gpu_memory_utilization:g} of {r.capacity_bytes / 1e9:,.1f} GB, {a.runtime_reserve_gb:g} GB runtime reserve "
        f"and {r.components.get('activations', 0) / 1e9:,.1f} GB of activations off it, "
        f"{r.weights_bytes / 1e9:,.1f} GB of weights per GPU, {max(r.kv_budget_bytes, 0) / 1e9:,.1f} GB of KV cache."
    )
    return out, [note]


def plan_commands(
    plan: Plan, d: Deployment, *, role: str = "aggregated", max_batched_tokens: int = 8192
) -> tuple[dict[str, LaunchCommand], list[str]]:
    """Each engine's command for ``plan`` (vLLM, SGLang, TensorRT-LLM) serving ``d``'s model at its precision with
    its speculative method, one command per node of its cluster (``gpus_per_node``; without a cluster, the GPU's),
    and notes on what was not carried over (a speculative method the engines' commands do not write, a checkpoint
    not published in the planned precision, speculation the plan was not scored with). ``d``'s GPU and memory
    assumptions size the memory fractions; ``d``'s own layout is not used (the plan's is)."""
    if not isinstance(plan, Plan):
        raise ValueError(f"plan must be a layout Plan, got {type(plan).__name__}")
    model, prec, spec = d.model, d.precision, d.spec
    gpus_per_node = d.cluster.gpus_per_node if d.cluster is not None else d.gpu.gpus_per_node
    notes: list[str] = []
    method = SPEC_LAUNCH_METHODS.get(spec.method) if spec.enabled else None
    if spec.enabled and method is None:
        notes.append(f"speculative method {spec.method!r} is not written into the commands: add its flags by hand")
    drafts = min(spec.num_speculative_tokens, 32) if method else 0
    lay = plan.layout
    if plan.phase == "decode":
        seqs = max(1, math.ceil(plan.tokens_per_gpu * lay.attention_tp * lay.pp - 1e-9))  # per attention-DP rank
        tokens = max(max_batched_tokens, seqs * (1 + drafts))  # every sequence's draft tokens + 1 in one step
    else:
        tokens = max(1, math.ceil(plan.tokens_per_gpu * lay.attention_tp))  # the prompt chunk of a rank
        seqs = 256
    choice = checkpoint_for(model, prec)
    model_id = choice.model_id if _REPO_ID.fullmatch(choice.model_id or "") else MODEL_PLACEHOLDER
    if model_id == MODEL_PLACEHOLDER:
        notes.append(f"{model.name} has no Hugging Face repository id: replace {MODEL_PLACEHOLDER} with its path")
    else:
        notes += choice.notes
    if drafts and not any(getattr(plan, f, 0) for f in _PLAN_SPEC_FIELDS):
        notes.append(
            f"The plan ({_number(plan.tokens_per_gpu)} {_UNITS[plan.phase]}, {plan.tokens_per_s_per_gpu:,.0f} "
            f"{'output' if plan.phase == 'decode' else 'prompt'} tokens/s per GPU) is scored "
            f"without speculative decoding; the commands add {method} with {drafts} draft token(s): its weights and "
            f"draft KV are not in the plan's memory, each sequence sends {drafts + 1} tokens per step (the DeepEP "
            "buffer and CUDA-graph sizes count them), and fewer sequences may fit than planned."
        )
    fractions, mem_notes = _fractions(lay, d, bool(method))
    notes += mem_notes
    ls = spec_from_plan(
        model_id,
        lay,
        redundant_experts=plan.redundant_experts,
        max_batched_tokens=min(tokens, 10_000_000),
        max_num_seqs=min(seqs, 1_000_000),
        kv_cache_dtype="fp8" if prec.kv_cache.startswith("fp8") else "auto",
        speculative=method,
        num_speculative_tokens=drafts,
        two_batch_overlap=plan.overlap == "two_batch",
        role=role,
        gpus_per_node=gpus_per_node,
        is_moe=model.is_moe,
    )
    ls = dataclasses.replace(
        ls,
        phase=plan.phase,
        quantization=choice.quantization if model_id != MODEL_PLACEHOLDER else None,
        linear_state=prec.linear_state,
        trust_remote_code=choice.trust_remote_code,
        **fractions,
    )
    cmds = launch_commands(ls)
    if (near := trtllm_layout(ls)) != ls:
        cmds["trtllm"] = _trtllm_resized(plan, d, near, bool(method), tokens if plan.phase == "decode" else 0)
    return cmds, notes


def _trtllm_resized(plan: Plan, d: Deployment, near, speculate: bool, batched_tokens: int) -> LaunchCommand:
    """TensorRT-LLM's command for a plan whose attention TP x DP it cannot run (layouts review 3 M12), sized for the
    attention DP it runs instead (``near``, :func:`core.serving.launch.trtllm.trtllm_layout`): each rank is one GPU
    holding every KV head, so a decode rank takes the plan's sequences per GPU, no more than that layout's KV cache
    holds at the full context, and the KV fraction is that layout's (attention weights on every GPU)."""
    lay = plan.layout
    sub = lay.model_copy(update={"attention_tp": 1, "attention_dp": near.attention_dp, "dcp": 1})
    fractions, _ = _fractions(sub, d, speculate)
    per_gpu, drafts = plan.tokens_per_gpu * lay.pp, near.num_speculative_tokens
    if plan.phase == "decode":
        one = unspeculated(d).with_layout(sub, plan.redundant_experts)
        fit = memory.max_concurrent_sequences(one, d.workload.context_len) // (sub.attention_dp * sub.dp)
        seqs = max(1, min(math.ceil(per_gpu - 1e-9), fit))
        tokens = max(batched_tokens, seqs * (1 + drafts))
        held = f"{fit:,} sequences of {d.workload.context_len:,} tokens that fit a GPU's KV cache there"
        sized = (
            f"max_batch_size {seqs:,} per rank: the plan's {_number(per_gpu)} sequences per GPU"
            + (f", cut to the {held}" if seqs < per_gpu - 1e-9 else f" (of the {held})")
            + f". The plan's {near.max_num_seqs:,} per attention-TP-{lay.attention_tp} rank would be "
            f"{near.max_num_seqs:,} per GPU here; TPOT at this layout is not the plan's (not scored)."
        )
    else:
        seqs, tokens = near.max_num_seqs, max(1, math.ceil(per_gpu - 1e-9))
        sized = f"max_num_tokens {tokens:,} per rank: the plan's prompt tokens per GPU per step."
    near = dataclasses.replace(near, max_num_seqs=min(seqs, 1_000_000), max_batched_tokens=min(tokens, 10_000_000))
    near = dataclasses.replace(near, **{k: v for k, v in fractions.items() if k != "gpu_memory_utilization"})
    c = launch_command(near, "trtllm")
    why = (
        f"TensorRT-LLM's attention DP runs attention at TP 1 on every GPU of the {lay.gpus_per_stage}-GPU group: "
        f"attention TP {lay.attention_tp} x DP {lay.attention_dp} is not expressible; the nearest layout, written "
        f"here, is attention DP {near.attention_dp}, sized for it: {sized} Its KV fraction is this layout's."
    )
    return dataclasses.replace(c, notes=(why, *c.notes))
