"""Engine launch commands for a ranked plan: the scenario's model, precision and speculative method on the
plan's layout and operating point (:mod:`core.serving.launch` writes each engine's flags).

The plan's operating point sets the limits: in decode, the sequences each attention-DP rank holds
(``--max-num-seqs`` / ``--max-running-requests`` / ``max_batch_size``) and enough batched tokens for them
(and their draft tokens); in prefill, the prompt chunk of each rank (``--max-num-batched-tokens`` /
``--chunked-prefill-size`` / ``max_num_tokens``).
"""

from __future__ import annotations

import math
import re

from core.deployment.specs import Precision, SpecDecodeConfig
from core.model import ModelSpec
from core.serving.launch import LaunchCommand, launch_commands, spec_from_plan
from core.serving.operating_point import Plan

__all__ = ["SPEC_LAUNCH_METHODS", "plan_commands"]

# the planner's speculative methods the launch commands write (EAGLE-family heads as EAGLE-3)
SPEC_LAUNCH_METHODS = {"mtp": "mtp", "eagle3": "eagle3", "eagle": "eagle3", "p_eagle": "eagle3", "ngram": "ngram"}
MODEL_PLACEHOLDER = "path/to/model"
_REPO_ID = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_./-]{0,199}")


def plan_commands(
    plan: Plan,
    model: ModelSpec,
    precision: Precision | str,
    *,
    gpus_per_node: int = 8,
    spec: SpecDecodeConfig | None = None,
    role: str = "aggregated",
    max_batched_tokens: int = 8192,
) -> tuple[dict[str, LaunchCommand], list[str]]:
    """Each engine's command for ``plan`` (vLLM, SGLang, TensorRT-LLM), and notes on what was not carried over
    (a speculative method the engines' commands do not write, a model without a repository id)."""
    if not isinstance(plan, Plan):
        raise ValueError(f"plan must be a layout Plan, got {type(plan).__name__}")
    prec = Precision.of(precision)
    spec = spec or SpecDecodeConfig()
    notes: list[str] = []
    method = SPEC_LAUNCH_METHODS.get(spec.method) if spec.enabled else None
    if spec.enabled and method is None:
        notes.append(f"speculative method {spec.method!r} is not written into the commands: add its flags by hand")
    drafts = min(spec.num_speculative_tokens, 32) if method else 0
    lay = plan.layout
    if plan.phase == "decode":
        seqs = max(1, math.ceil(plan.tokens_per_gpu * lay.attention_tp * lay.pp - 1e-9))  # per attention-DP rank
        tokens = max(max_batched_tokens, seqs * (1 + drafts))
    else:
        tokens = max(1, math.ceil(plan.tokens_per_gpu * lay.attention_tp))  # the prompt chunk of a rank
        seqs = 256
    model_id = model.hf_id if _REPO_ID.fullmatch(model.hf_id or "") else MODEL_PLACEHOLDER
    if model_id == MODEL_PLACEHOLDER:
        notes.append(f"{model.name} has no Hugging Face repository id: replace {MODEL_PLACEHOLDER} with its path")
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
    return launch_commands(ls), notes
