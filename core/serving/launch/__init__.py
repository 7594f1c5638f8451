"""Engine launch commands for a parallel layout: vLLM (``vllm serve``), SGLang (``python -m
sglang.launch_server``) and TensorRT-LLM (``trtllm-serve`` + its ``--extra_llm_api_options`` YAML),
aggregated or as the prefill / decode worker of a disaggregated pair.

Pure text, nothing is run. The engine versions, every flag a command may use and the page each was checked
against are in ``catalogs/engines.yaml``. What an engine cannot express exactly is said in
``LaunchCommand.notes`` with the nearest layout written instead. Shell safety: the model id is the only
free text and is validated; JSON arguments are single-quoted and built from numbers and fixed words.
"""

from __future__ import annotations

import re

import yaml

from core.deployment.specs import ParallelLayout
from core.serving.launch.sglang import sglang_blocks
from core.serving.launch.spec import (
    EAGLE3_DRAFT,
    ENGINES,
    KV_CACHE_DTYPES,
    ROLES,
    SPECULATIVE_METHODS,
    TRTLLM_YAML,
    LaunchCommand,
    LaunchSpec,
    engine_catalog,
)
from core.serving.launch.trtllm import trtllm_blocks
from core.serving.launch.vllm import vllm_blocks

_ENV = re.compile(r"[A-Z][A-Z0-9_]*=[0-9]+")  # an environment assignment that starts a command line

__all__ = [
    "ENGINES",
    "KV_CACHE_DTYPES",
    "ROLES",
    "SPECULATIVE_METHODS",
    "TRTLLM_YAML",
    "LaunchCommand",
    "LaunchSpec",
    "launch_command",
    "launch_commands",
    "spec_from_plan",
]


def launch_command(spec: LaunchSpec, engine: str) -> LaunchCommand:
    """The command(s) that run ``spec`` on ``engine`` (one of ``ENGINES``)."""
    if not isinstance(spec, LaunchSpec):
        raise ValueError(f"spec must be a LaunchSpec, got {type(spec).__name__}")
    if not (isinstance(engine, str) and engine in ENGINES):
        raise ValueError(f"engine {engine!r:.40} is not one of: {', '.join(ENGINES)}")
    entry = engine_catalog()[engine]
    notes: list[str] = []
    cfg: dict = {}
    if engine == "trtllm":
        blocks, cfg = trtllm_blocks(spec, notes)
    else:
        blocks = (vllm_blocks if engine == "vllm" else sglang_blocks)(spec, notes)
    if spec.dcp > 1 and engine != "vllm":
        notes.append(f"{entry['name']} has no decode context parallelism: 1/{spec.dcp} of the plan's sequences fit.")
    if spec.speculative == "eagle3":
        notes.append(f"{EAGLE3_DRAFT} stands for the EAGLE-3 draft head's Hugging Face id or path.")
    if spec.role != "aggregated":
        notes.append(f"This is the {spec.role} worker of a disaggregated pair. {entry.get('disaggregated_front', '')}")
    if spec.dp > 1:
        notes.append(
            f"dp = {spec.dp}: the command sizes one replica of {spec.gpus_per_replica} GPUs; run it {spec.dp} times on "
            "separate GPUs behind a load balancer or router."
        )
    command = f"# written for {entry['name']} {entry['version']}\n" + "\n\n".join(blocks)
    words = [t for line in command.splitlines() if not line.startswith("#") for t in line.split()]
    flags = [t for t in words if t.startswith("--")]
    flags = [f"env:{t.split('=')[0]}" for t in words if _ENV.fullmatch(t)] + flags
    flags += [f"yaml:{key}" for key in cfg]
    config_yaml = yaml.safe_dump(cfg, sort_keys=False, default_flow_style=False) if cfg else ""
    return LaunchCommand(engine, entry["version"], command, config_yaml, tuple(notes), tuple(dict.fromkeys(flags)))


def launch_commands(spec: LaunchSpec) -> dict[str, LaunchCommand]:
    """``launch_command`` for every engine of ``ENGINES``."""
    return {engine: launch_command(spec, engine) for engine in ENGINES}


def spec_from_plan(
    model_id: str,
    layout: ParallelLayout,
    *,
    redundant_experts: int = 0,
    max_batched_tokens: int = 8192,
    max_num_seqs: int = 256,
    kv_cache_dtype: str = "auto",
    speculative: str | None = None,
    num_speculative_tokens: int = 0,
    two_batch_overlap: bool = False,
    role: str = "aggregated",
    gpus_per_node: int = 8,
    is_moe: bool = True,
) -> LaunchSpec:
    """A ``LaunchSpec`` from a planner layout (``core.deployment.specs.ParallelLayout``) and the serving limits."""
    limits = {k: v for k, v in locals().items() if k not in ("model_id", "layout")}  # the keyword arguments
    if not isinstance(layout, ParallelLayout):
        raise ValueError(f"layout must be a ParallelLayout, got {type(layout).__name__}")
    sizes = {f: getattr(layout, f) for f in ("attention_tp", "attention_dp", "ep", "expert_tp", "pp", "dp", "dcp")}
    return LaunchSpec(model_id=model_id, **sizes, **limits)
