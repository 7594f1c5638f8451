"""What a launch command is written from (:class:`LaunchSpec`: one server's layout and limits, validated) and
what it gives (:class:`LaunchCommand`), the engines' catalog (``catalogs/engines.yaml``) and the text helpers
the three engine writers share."""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core._util.checks import is_number, load_yaml, whole
from core.model.dtypes import LINEAR_STATE_DTYPES

__all__ = [
    "EAGLE3_DRAFT",
    "ENGINES",
    "ENGINES_FILE",
    "KV_CACHE_DTYPES",
    "MAX_GPUS",
    "PHASES",
    "QUANTIZATIONS",
    "ROLES",
    "SPECULATIVE_METHODS",
    "TORCH_DTYPE",
    "TRTLLM_YAML",
    "Args",
    "LaunchCommand",
    "LaunchSpec",
]

ENGINES = ("vllm", "sglang", "trtllm")
ENGINES_FILE = Path(__file__).resolve().parents[3] / "catalogs" / "engines.yaml"
ROLES = ("aggregated", "prefill", "decode")
KV_CACHE_DTYPES = ("auto", "fp8")
SPECULATIVE_METHODS = ("mtp", "eagle3", "ngram")
PHASES = ("prefill", "decode")
TORCH_DTYPE = {"bf16": "bfloat16", "fp32": "float32"}  # as vLLM's and SGLang's dtype flags spell them
QUANTIZATIONS = ("fp8",)  # on-the-fly quantisation of a wider checkpoint (vLLM / SGLang --quantization)
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
    linear_state: str | None = None  # the recurrent state's dtype where the deployment overrides the checkpoint's
    speculative: str | None = None
    num_speculative_tokens: int = 0
    two_batch_overlap: bool = False
    role: str = "aggregated"
    is_moe: bool = True
    phase: str = "decode"  # the phase the plan was scored for: an aggregated vLLM command's all-to-all follows it
    quantization: str | None = None  # quantise on load (QUANTIZATIONS), None: load the checkpoint as stored
    trust_remote_code: bool = False  # the model's config or tokenizer is custom code
    gpu_memory_utilization: float | None = None  # vLLM's fraction of device memory for weights + activations + KV
    mem_fraction_static: float | None = None  # SGLang's fraction for weights + the KV pool
    free_gpu_memory_fraction: float | None = None  # TensorRT-LLM's fraction of the memory left after weights for KV

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
        for name in ("two_batch_overlap", "is_moe", "trust_remote_code"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r:.40}")
        _choice("kv_cache_dtype", self.kv_cache_dtype, KV_CACHE_DTYPES)
        if self.linear_state is not None:
            _choice("linear_state", self.linear_state, LINEAR_STATE_DTYPES)
        _choice("role", self.role, ROLES)
        _choice("phase", self.phase, PHASES)
        if self.quantization is not None:
            _choice("quantization", self.quantization, QUANTIZATIONS)
        for name in ("gpu_memory_utilization", "mem_fraction_static", "free_gpu_memory_fraction"):
            v = getattr(self, name)
            if v is not None and not (is_number(v) and 0 < v <= 1):
                raise ValueError(f"{name} must be a fraction in (0, 1] or None, got {v!r:.40}")
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

    @property
    def decodes(self) -> bool:
        """The server runs decode steps the plan sized (a decode worker, or aggregated from a decode plan)."""
        return self.role == "decode" or (self.role == "aggregated" and self.phase == "decode")

    @property
    def dispatch_tokens_per_rank(self) -> int:
        """Tokens one rank sends through the all-to-all per decode micro-batch: its sequences x (draft tokens + 1),
        halved by two-batch overlap, rounded up (DeepEP's low-latency buffer must hold them)."""
        tokens = self.max_num_seqs * (1 + self.num_speculative_tokens)
        return -(-tokens // 2) if self.two_batch_overlap else tokens


@dataclass(frozen=True)
class LaunchCommand:
    engine: str
    version: str
    command: str  # shell command(s): " \\\n  " continuations, "# ..." comment lines, one block per node
    config_yaml: str = ""  # TensorRT-LLM --extra_llm_api_options file, "" if none
    notes: tuple[str, ...] = ()  # what the engine cannot express exactly, and how to run what was written
    flags: tuple[str, ...] = ()  # every --flag in command, then "yaml:<key>" for each top-level YAML key


@functools.lru_cache(maxsize=1)
def engine_catalog() -> dict:
    data = load_yaml(ENGINES_FILE.read_text(encoding="utf-8"))
    for engine in ENGINES:
        entry = data.get(engine) if isinstance(data, dict) else None
        if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) for k in ("name", "version")):
            raise ValueError(f"{ENGINES_FILE}: engine {engine!r} needs a name and a version")
        tbo = entry.get("two_batch_overlap")
        if not (
            isinstance(tbo, dict)
            and tbo.get("source") in (entry.get("sources") or {})
            and (tbo.get("setting") is None or tbo.get("setting") in (entry.get("flags") or {}))
        ):
            raise ValueError(
                f"{ENGINES_FILE}: engine {engine!r} needs two_batch_overlap: {{setting: one of its flags or null, "
                "source: one of its sources}"
            )
        imb = entry.get("attention_dp_imbalance")
        if not (
            isinstance(imb, dict)
            and imb.get("source") in (entry.get("sources") or {})
            and is_number(imb.get("scale_at_dp8"))
            and 1.0 <= imb["scale_at_dp8"] <= 4.0
        ):
            raise ValueError(
                f"{ENGINES_FILE}: engine {engine!r} needs attention_dp_imbalance: {{scale_at_dp8: a number in 1..4, "
                "source: one of its sources}"
            )
    return data


def overlaps_two_batches(stack: str) -> bool:
    """Whether serving ``stack`` (an engine of ``ENGINES``) can split a step into two micro-batches, one's
    all-to-all hidden under the other's compute: the one place the layout search asks before scoring two-batch
    overlap (``catalogs/engines.yaml`` two_batch_overlap, with the source read). Public, not in ``__all__``."""
    _choice("stack", stack, ENGINES)
    return engine_catalog()[stack]["two_batch_overlap"]["setting"] is not None


@functools.lru_cache(maxsize=64)
def _expected_max_normal(ranks: int) -> float:
    """The mean of the largest of ``ranks`` independent standard normals, ``int x R phi(x) Phi(x)^(R-1) dx`` (0 for
    one; 1 / sqrt(pi) = 0.5642 for two, 1.4236 for eight: Tippett's table), by the trapezoid rule on [-9, 9]."""
    if ranks <= 1:
        return 0.0
    h, total = 1e-3, 0.0
    for i in range(18_001):
        x = -9.0 + i * h
        phi = math.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
        f = x * ranks * phi * (0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))) ** (ranks - 1)
        total += f * (0.5 if i in (0, 18_000) else 1.0)
    return total * h


def mixed_step_scale(stack: str, attention_dp: int) -> float:
    """How much longer a step that carries prompt work runs on a colocated replica of ``stack`` with ``attention_dp``
    attention data-parallel ranks than the same work spread evenly over the ranks (the planner's step): every rank
    waits at each MoE layer for the busiest, and a prompt chunk lands on one rank at a time. ``catalogs/engines.yaml``
    attention_dp_imbalance gives it at 8 ranks (TensorRT-LLM's measured 1.5412, tech blog 10); other counts scale
    with the expected busiest of ``R`` ranks whose loads vary alike, ``1 + (s8 - 1) x E[max of R normals] /
    E[max of 8]``: 1 for one rank, 1.2145 for two, 1.3913 for four, 1.6714 for sixteen. A step with no prompt work
    (decode only: equal batches) and a disaggregated pool's steps pay none. Public, not in ``__all__``."""
    _choice("stack", stack, ENGINES)
    ranks = whole("attention_dp", attention_dp, 1, 1_000_000)
    at8 = float(engine_catalog()[stack]["attention_dp_imbalance"]["scale_at_dp8"])
    return 1.0 + (at8 - 1.0) * _expected_max_normal(ranks) / _expected_max_normal(8)


def json_arg(obj: dict) -> str:
    """A JSON argument, single-quoted for the shell (built from numbers and fixed words only)."""
    return "'" + json.dumps(obj, separators=(",", ":")) + "'"


def nvshmem_env(tokens: int) -> dict[str, int]:
    """DeepEP's low-latency dispatch asserts NVSHMEM_QP_DEPTH >= (tokens per rank + 1) x 2 and defaults the depth to
    1024 (deepseek-ai/DeepEP deep_ep/buffer.py): raised where the plan's tokens need more than 511."""
    need = 2 * (tokens + 1)
    return {"NVSHMEM_QP_DEPTH": need} if need > 1024 else {}


def env_prefix(env: dict[str, int]) -> str:
    """``NAME=value `` assignments that start a command line (numbers only: nothing to quote)."""
    return "".join(f"{k}={int(v)} " for k, v in env.items())


def render(head: str, args: Args) -> str:
    return _CONT.join([head, *(flag if value is None else f"{flag} {value}" for flag, value in args)])


def per_node(s: LaunchSpec, nodes: int, one: Callable[[str, int | None], str], notes: list[str]) -> list[str]:
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
