"""The Speculative page's worked example: a code assistant serving Llama-3 70B with a Llama-3 8B draft.

Source: the book chapter on speculative decoding and MoE, section 13.8's worked example (the source text
behind ``docs/errata.md`` #10, #16 and #24): Llama-3 70B BF16 with a Llama-3 8B BF16 draft on 2 x H100, batch 16
at 2,048 tokens; traffic 70% code completion at alpha 0.88 and 30% chat at alpha 0.72 (blended 0.832); K = 5
draft tokens; the draft costs c = 16 GB / 140 GB of weights read (16/140 = 0.114 of a target step). The chapter
rounds E to 3.96 and the speedup to 2.52x; the planner's 3.98 and 2.53x are errata #16.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.deployment.specs import Scenario, SpecDecodeConfig

__all__ = ["CODE_ASSISTANT", "WorkedExample"]


@dataclass(frozen=True)
class WorkedExample:
    """A speculative-decoding example: a traffic mix of two request kinds with their acceptance, and the deployment
    (target, draft, GPUs, workload) it runs on."""

    code_share: float  # share of the requests that are code completion; the rest are chat
    alpha_code: float  # per-token acceptance on code
    alpha_chat: float  # per-token acceptance on chat
    gamma: int  # draft tokens per verification step (the chapter's K)
    target_weight_gb: float  # weights read per target step, GB (the chapter's round 70B x 2 B)
    draft_weight_gb: float  # weights read per draft step, GB (8B x 2 B)
    model_id: str
    draft_model_id: str
    gpu_id: str
    gpus: int
    weights: str  # the target's and the draft's weight dtype
    batch: int  # sequences decoded together
    input_len: int
    output_len: int

    @property
    def draft_cost(self) -> float:
        """c: a draft step's cost as a share of a target step, the bytes each reads (memory-bound decode)."""
        return self.draft_weight_gb / self.target_weight_gb

    def changes(self, scenario: Scenario, alpha: float) -> dict[str, Any]:
        """The scenario fields loading this example sets (``ui.state.update_scenario``'s keywords): its models, GPUs,
        weight and KV dtypes, batch and lengths over ``scenario``'s other settings, drafting with acceptance
        ``alpha`` (the blend of the page's sliders)."""
        return {
            "model_id": self.model_id,
            "gpu_id": self.gpu_id,
            "num_nodes": 1,
            "gpus_per_node": self.gpus,
            "layout": None,
            "precision": scenario.precision.model_copy(
                update={"weights": self.weights, "routed_experts": None, "kv_cache": self.weights}
            ),
            "workload": scenario.workload.model_copy(
                update={"batch": self.batch, "input_len": self.input_len, "output_len": self.output_len}
            ),
            "spec": SpecDecodeConfig(
                method="draft_model",
                draft_model_id=self.draft_model_id,
                num_speculative_tokens=self.gamma,
                acceptance_rate=round(alpha, 4),
                draft_cost=round(self.draft_cost, 4),
            ),
        }


CODE_ASSISTANT = WorkedExample(
    code_share=0.70,
    alpha_code=0.88,
    alpha_chat=0.72,
    gamma=5,
    target_weight_gb=140.0,
    draft_weight_gb=16.0,
    model_id="llama-3-70b",
    draft_model_id="llama-3-8b",
    gpu_id="h100-sxm",
    gpus=2,
    weights="bf16",
    batch=16,
    input_len=1536,  # 1,536 + 512 = the chapter's 2,048 tokens per sequence
    output_len=512,
)
