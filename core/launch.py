"""Engine launch commands for a parallel layout: vLLM (``vllm serve``), SGLang (``python -m
sglang.launch_server``) and TensorRT-LLM (``trtllm-serve`` + its ``--extra_llm_api_options`` YAML),
aggregated or as the prefill / decode worker of a disaggregated pair.

Pure text, nothing is run. The engine versions, every flag a command may use and the page each was checked
against are in ``catalogs/engines.yaml``. What an engine cannot express exactly is said in
``LaunchCommand.notes`` with the nearest layout written instead. Shell safety: the model id is the only
free text and is validated; JSON arguments are single-quoted and built from numbers and fixed words.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from core._checks import load_yaml, whole
from core.specs import ParallelLayout

__all__ = [
    "ENGINES",
    "TRTLLM_YAML",
    "LaunchCommand",
    "LaunchSpec",
    "launch_command",
    "launch_commands",
    "spec_from_plan",
]

ENGINES = ("vllm", "sglang", "trtllm")
ENGINES_FILE = Path(__file__).resolve().parent.parent / "catalogs" / "engines.yaml"
ROLES = ("aggregated", "prefill", "decode")
KV_CACHE_DTYPES = ("auto", "fp8")
SPECULATIVE_METHODS = ("mtp", "eagle3", "ngram")
EAGLE3_DRAFT = "EAGLE3_DRAFT_MODEL"  # placeholder: the spec carries no draft-model id
TRTLLM_YAML = "extra_llm_api_options.yaml"
# What a scenario allows bounds what a command may be written for (issue 37): the largest cluster (the README's
# 65,536 GPUs, core.hardware.ClusterSpec), Scenario's GPUs per node and MemoryAssumptions' redundant experts.
MAX_GPUS = 65_536
MAX_REPLICA_GPUS = MAX_GPUS
_MODEL_ID = re.compile(r"[A-Za-z0-9_./][A-Za-z0-9_./-]*")
_CONT = " \\\n  "
_INT_RANGES = {  # allowed range of each whole-number field
    **dict.fromkeys(("attention_tp", "attention_dp", "ep", "expert_tp", "pp", "dp", "dcp"), (1, MAX_GPUS)),
    **{"gpus_per_node": (1, 1024), "redundant_experts": (0, 100_000), "num_speculative_tokens": (0, 32)},
    **{"max_batched_tokens": (1, 10_000_000), "max_num_seqs": (1, 1_000_000)},
}

Args = list[tuple[str, str | None]]


def _choice(name: str, value, allowed: tuple) -> None:
    if not (isinstance(value, str) and value in allowed):
        raise ValueError(f"{name} {value!r:.60} is not one of: {', '.join(allowed)}")


@dataclass(frozen=True)
class LaunchSpec:
    """One server's layout and limits. ``max_batched_tokens`` and ``max_num_seqs`` are per attention-DP
    rank; ``dp`` counts whole-model replicas (separate servers)."""

    model_id: str
    attention_tp: int = 1
    attention_dp: int = 1
    ep: int = 1
    expert_tp: int = 1
    pp: int = 1
    dp: int = 1
    dcp: int = 1  # decode context parallel ranks inside attention TP (vLLM only)
    gpus_per_node: int = 8
    redundant_experts: int = 0
    max_batched_tokens: int = 8192
    max_num_seqs: int = 256
    kv_cache_dtype: str = "auto"
    speculative: str | None = None
    num_speculative_tokens: int = 0
    two_batch_overlap: bool = False
    role: str = "aggregated"
    is_moe: bool = True

    def __post_init__(self) -> None:
        mid = self.model_id
        if not isinstance(mid, str) or not mid:
            raise ValueError("model_id must be a non-empty Hugging Face repo id, e.g. 'deepseek-ai/DeepSeek-V3'")
        if len(mid) > 200:
            raise ValueError(f"model_id is {len(mid)} characters long; at most 200 are allowed")
        if not _MODEL_ID.fullmatch(mid):
            raise ValueError(
                f"model_id {mid!r:.60} may hold only letters, digits and . _ / - and may not start with '-': "
                "it is pasted into a shell command"
            )
        for name, (lo, hi) in _INT_RANGES.items():
            object.__setattr__(self, name, whole(name, getattr(self, name), lo, hi))
        for name in ("two_batch_overlap", "is_moe"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r:.40}")
        _choice("kv_cache_dtype", self.kv_cache_dtype, KV_CACHE_DTYPES)
        _choice("role", self.role, ROLES)
        if self.speculative is not None:
            _choice("speculative", self.speculative, SPECULATIVE_METHODS)
            if self.num_speculative_tokens < 1:
                raise ValueError(f"speculative {self.speculative!r} needs num_speculative_tokens from 1 to 32")
        elif self.num_speculative_tokens:
            raise ValueError("num_speculative_tokens must be 0 when speculative is None (no speculative method)")
        if self.attention_tp % self.dcp:
            raise ValueError(f"dcp {self.dcp} must divide attention_tp {self.attention_tp}")
        attn, experts = self.attention_tp * self.attention_dp, self.ep * self.expert_tp
        if attn != experts:
            raise ValueError(
                f"attention_tp x attention_dp ({attn}) must equal ep x expert_tp ({experts}): both count the GPUs "
                "of one pipeline stage"
            )
        if attn * self.pp > MAX_REPLICA_GPUS:
            raise ValueError(
                f"one replica would use {attn * self.pp:,} GPUs; at most {MAX_REPLICA_GPUS:,} are allowed (the largest "
                "cluster a scenario allows)"
            )
        if attn * self.pp * self.dp > MAX_GPUS:
            raise ValueError(
                f"{self.dp:,} replicas of {attn * self.pp:,} GPUs would use {attn * self.pp * self.dp:,} GPUs; at most "
                f"{MAX_GPUS:,} are allowed (the largest cluster a scenario allows)"
            )

    @property
    def gpus_per_stage(self) -> int:
        return self.attention_tp * self.attention_dp

    @property
    def gpus_per_replica(self) -> int:
        return self.gpus_per_stage * self.pp


@dataclass(frozen=True)
class LaunchCommand:
    engine: str
    version: str
    command: str  # shell command(s): " \\\n  " continuations, "# ..." comment lines, one block per node
    config_yaml: str = ""  # TensorRT-LLM --extra_llm_api_options file, "" if none
    notes: tuple[str, ...] = ()  # what the engine cannot express exactly, and how to run what was written
    flags: tuple[str, ...] = ()  # every --flag in command, then "yaml:<key>" for each top-level YAML key


@functools.lru_cache(maxsize=1)
def _engine_catalog() -> dict:
    data = load_yaml(ENGINES_FILE.read_text(encoding="utf-8"))
    for engine in ENGINES:
        entry = data.get(engine) if isinstance(data, dict) else None
        if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) for k in ("name", "version")):
            raise ValueError(f"{ENGINES_FILE}: engine {engine!r} needs a name and a version")
    return data


def _json(obj: dict) -> str:
    """A JSON argument, single-quoted for the shell (built from numbers and fixed words only)."""
    return "'" + json.dumps(obj, separators=(",", ":")) + "'"


def _render(head: str, args: Args) -> str:
    return _CONT.join([head, *(flag if value is None else f"{flag} {value}" for flag, value in args)])


def _per_node(s: LaunchSpec, nodes: int, one: Callable[[str, int | None], str], notes: list[str]) -> list[str]:
    """One command per node: the head (node 0) and node 1 written out; from three nodes on, nodes 1.. share
    one command that reads the node's index from NODE_RANK. ``one(rank_text, node_index_or_None)``."""
    out = [f"# node 0 of {nodes} (head)\n" + one("0", 0)]
    if nodes == 2:
        out.append("# node 1 of 2\n" + one("1", 1))
    else:
        worker = one('"$NODE_RANK"', None)
        out.append(f"# nodes 1 to {nodes - 1}: run on each with NODE_RANK set to its index\n{worker}")
    rank = "" if nodes == 2 else " and NODE_RANK to each worker node's index"
    notes.append(
        f"One replica ({s.gpus_per_replica} GPUs) spans {nodes} nodes of {s.gpus_per_node}: run one command per node, "
        f"with HEAD_IP set to node 0's address on every node{rank}."
    )
    return out


def _vllm(s: LaunchSpec, notes: list[str]) -> list[str]:
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
            rest += [("--enable-eplb", None), ("--eplb-config", _json({"num_redundant_experts": s.redundant_experts}))]
    elif s.is_moe and s.redundant_experts:
        notes.append("vLLM's EPLB needs expert parallelism: with EP 1 the redundant experts are left out.")
    rest += [("--enable-dbo", None)] if s.two_batch_overlap else []
    rest += [("--max-num-batched-tokens", str(s.max_batched_tokens)), ("--max-num-seqs", str(s.max_num_seqs))]
    rest += [("--kv-cache-dtype", "fp8")] if s.kv_cache_dtype == "fp8" else []
    if s.speculative:
        draft = {"model": EAGLE3_DRAFT} if s.speculative == "eagle3" else {}
        spec = {"method": s.speculative, **draft, "num_speculative_tokens": s.num_speculative_tokens}
        rest.append(("--speculative-config", _json(spec)))
    if s.role != "aggregated":
        kv_role = "kv_producer" if s.role == "prefill" else "kv_consumer"
        rest.append(("--kv-transfer-config", _json({"kv_connector": "NixlConnector", "kv_role": kv_role})))
    head, world, gpn = f"vllm serve {s.model_id}", s.gpus_per_replica, s.gpus_per_node
    if world <= gpn:
        return [_render(head, par + rest)]
    if s.attention_dp > 1 and gpn % engine_gpus == 0 and world % gpn == 0:
        local = gpn // engine_gpus
        base: Args = [
            ("--data-parallel-size-local", str(local)),
            ("--data-parallel-address", '"$HEAD_IP"'),
            ("--data-parallel-rpc-port", "13345"),
        ]

        def dp_node(rank: str, index: int | None) -> str:
            if rank == "0":
                return _render(head, par + base + rest)
            start = str(index * local) if index is not None else f'"$((NODE_RANK * {local}))"'
            return _render(head, [*par, *base, ("--data-parallel-start-rank", start), ("--headless", None), *rest])

        return _per_node(s, world // gpn, dp_node, notes)
    if s.attention_dp == 1 and world % gpn == 0:

        def tp_node(rank: str, index: int | None) -> str:
            mn: Args = [("--nnodes", str(world // gpn)), ("--node-rank", rank), ("--master-addr", '"$HEAD_IP"')]
            return _render(head, par + mn + ([] if rank == "0" else [("--headless", None)]) + rest)

        return _per_node(s, world // gpn, tp_node, notes)
    notes.append(
        f"This layout does not split evenly over nodes of {gpn} GPUs for vLLM (each DP engine holds TP x PP = "
        f"{engine_gpus} GPUs): the single-node command is written; a DP engine spanning nodes needs "
        "--data-parallel-backend ray on a Ray cluster."
    )
    return [_render(head, par + rest)]


def _sglang(s: LaunchSpec, notes: list[str]) -> list[str]:
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
        return [_render(head, par + rest)]

    def node(rank: str, index: int | None) -> str:
        mn: Args = [("--dist-init-addr", '"$HEAD_IP:5000"'), ("--nnodes", str(world // gpn)), ("--node-rank", rank)]
        return _render(head, par + mn + rest)

    return _per_node(s, world // gpn, node, notes)


def _trtllm(s: LaunchSpec, notes: list[str]) -> tuple[list[str], dict]:
    stage, n = s.gpus_per_stage, s.num_speculative_tokens
    tp = stage if (s.is_moe or s.attention_dp == 1) else s.attention_tp
    args: Args = [("--tp_size", str(tp))] + ([("--pp_size", str(s.pp))] if s.pp > 1 else [])
    cfg: dict = {}
    if s.is_moe and s.attention_dp > 1:
        cfg["enable_attention_dp"] = True
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
    if s.kv_cache_dtype == "fp8":
        cfg["kv_cache_config"] = {"dtype": "fp8"}
    cfg["cuda_graph_config"] = {"enable_padding": True, "max_batch_size": s.max_num_seqs}
    if s.speculative == "mtp":
        cfg["speculative_config"] = {"decoding_type": "MTP", "num_nextn_predict_layers": n}
    elif s.speculative == "eagle3":
        cfg["speculative_config"] = {"decoding_type": "Eagle3", "max_draft_len": n, "speculative_model": EAGLE3_DRAFT}
    elif s.speculative == "ngram":
        cfg["speculative_config"] = {"decoding_type": "NGram", "max_draft_len": n}
    if s.role != "aggregated":
        cfg["cache_transceiver_config"] = {"backend": "NIXL"}
        cfg.update({"disable_overlap_scheduler": True} if s.role == "prefill" else {})
    if s.two_batch_overlap:
        notes.append("No TensorRT-LLM two-batch-overlap setting is written (its overlap scheduler is another thing).")
    if tp * s.pp > s.gpus_per_node:
        notes.append(
            f"One server ({tp * s.pp} GPUs) spans nodes of {s.gpus_per_node}: launch it under Slurm or MPI with one "
            "task per GPU through trtllm-llmapi-launch (srun ... trtllm-llmapi-launch trtllm-serve ...)."
        )
    notes.append(f"Save config_yaml as {TRTLLM_YAML} in the directory the command runs in.")
    return [_render(f"trtllm-serve {s.model_id}", args)], cfg


def launch_command(spec: LaunchSpec, engine: str) -> LaunchCommand:
    """The command(s) that run ``spec`` on ``engine`` (one of ``ENGINES``)."""
    if not isinstance(spec, LaunchSpec):
        raise ValueError(f"spec must be a LaunchSpec, got {type(spec).__name__}")
    if not (isinstance(engine, str) and engine in ENGINES):
        raise ValueError(f"engine {engine!r:.40} is not one of: {', '.join(ENGINES)}")
    entry = _engine_catalog()[engine]
    notes: list[str] = []
    cfg: dict = {}
    if engine == "trtllm":
        blocks, cfg = _trtllm(spec, notes)
    else:
        blocks = (_vllm if engine == "vllm" else _sglang)(spec, notes)
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
    flags = [t for line in command.splitlines() for t in line.split() if t.startswith("--")]
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
    """A ``LaunchSpec`` from a planner layout (``core.specs.ParallelLayout``) and the serving limits."""
    limits = {k: v for k, v in locals().items() if k not in ("model_id", "layout")}  # the keyword arguments
    if not isinstance(layout, ParallelLayout):
        raise ValueError(f"layout must be a ParallelLayout, got {type(layout).__name__}")
    sizes = {f: getattr(layout, f) for f in ("attention_tp", "attention_dp", "ep", "expert_tp", "pp", "dp", "dcp")}
    return LaunchSpec(model_id=model_id, **sizes, **limits)
