"""What a served decode step pays beyond the planner's kernel step (issue 35): scheduling, sampling, CUDA-graph
replay, host synchronisation and the draft passes of speculative decoding, per serving stack.

A served step = the kernel step (``core.perf``) + :func:`step_overhead_s`::

    overhead_s = fixed_s (dp_attention_s with attention DP > 1, where fitted) + per_layer_s x num_layers
                 + per_indexer_s x indexer layers + per_draft_s x draft passes + rocm_s (on AMD GPUs)

The values are fitted per stack on published batch-1 and low-concurrency (1-4 clients) measurements, each with
its source, engine version and date, in ``catalogs/served_step.yaml`` (``python -m bench.served_step --write``
refits them; the form of each stack's fit, chosen by leave-one-out error, may leave a term at 0). A draft pass is
one autoregressive draft forward (MTP, EAGLE: ``k`` per verification) or DSpark's one parallel block pass
(:func:`draft_passes`); the kernel step of a verification is the target's forward over ``k + 1`` tokens. An
indexer layer is one whose mixer runs a sparse-attention indexer of its own (DeepSeek-V3.2's and GLM-5's DSA; a
GLM-5.2 layer that reuses the last top-k runs none): at small batch its chain of ~12 latency-bound launches
(projections, norm, RoPE, quantisation, index-key store, paged logits, top-k) costs time no FLOP or byte count
holds. ``dp_attention_s`` replaces ``fixed_s`` for layouts with attention data parallelism (every rank steps in
lock-step with the others), fitted on DP-attention decode points where a stack has them. ``rocm_s`` is what the
stack's ROCm build pays per step on an AMD GPU beyond the same form's costs: a term of the fit like the others, 1 on
the stack's AMD points and 0 elsewhere (SGLang: its MI355X points, whose steps run 3-4 ms over the kernels while AMD's
own measured MoE kernels are faster than the planner's, bench/RESULTS.md); 0 for a stack with no AMD point. CUDA
graphs off (eager) is not fitted: :func:`served_step_cost` refuses it and says why (the file's ``not_fitted``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path

import yaml

from core._util.checks import file_stamp, load_yaml
from core.model import ModelSpec

__all__ = [
    "MODES",
    "SERVED_STEP_PATH",
    "ServedStepCost",
    "draft_passes",
    "indexer_kinds",
    "indexer_layers",
    "served_step_cost",
    "served_step_for",
    "step_overhead_s",
]

SERVED_STEP_PATH = Path(__file__).resolve().parents[2] / "catalogs" / "served_step.yaml"
# decode modes: CUDA-graph decode without drafting, and the drafting methods (each adds per_draft_s per pass)
MODES = ("cuda_graph", "mtp", "eagle3", "dspark")
_AUTOREGRESSIVE = ("mtp", "eagle3")  # one draft forward per drafted token; DSpark drafts a block in one pass
_MAX_COST_S = 1.0  # a per-step cost of a second or more is a typo, not a measurement
_MAX_TEXT = 2000


def _seconds(name: str, v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 <= v <= _MAX_COST_S:
        raise ValueError(f"{name} must be a number of seconds within 0 and {_MAX_COST_S:g}, got {v!r}")
    return float(v)


def _text(name: str, v) -> str:
    if not isinstance(v, str) or not v.strip() or len(v) > _MAX_TEXT:
        raise ValueError(f"{name} must be a non-empty text of at most {_MAX_TEXT} characters, got {str(v)[:60]!r}")
    return v


@dataclass(frozen=True)
class ServedStepCost:
    """One stack's per-step costs in one mode, with what they hold for: ``fixed_s`` per step, ``per_layer_s`` per
    decoder layer, ``per_draft_s`` per draft pass (0 in ``cuda_graph`` mode), ``per_indexer_s`` per layer running a
    sparse-attention indexer, ``dp_attention_s`` per step in place of ``fixed_s`` with attention DP > 1 (None: not
    fitted, ``fixed_s`` holds); ``rocm_s`` per step in addition on an AMD GPU (the engine's ROCm build; 0: none
    fitted); ``source`` (the fit and the measurements it came from), ``engine``, ``version`` and
    ``date`` (the engine versions and dates of those measurements); ``indexer_mixers``: the mixer kinds (``mla``,
    ``gqa``) whose indexer layers ``per_indexer_s`` counts, the kinds the fit was measured on (None: every kind). An
    engine runs each kind's indexer through its own kernels (SGLang: DSA's chain in its NSA backend for MLA layers,
    MiniMax-M3's fused MSA kernel for GQA ones), so a cost measured on one kind is not charged to another."""

    fixed_s: float
    per_layer_s: float
    source: str
    engine: str
    version: str
    date: str
    per_draft_s: float = 0.0
    mode: str = "cuda_graph"
    per_indexer_s: float = 0.0
    dp_attention_s: float | None = None
    indexer_mixers: tuple[str, ...] | None = None
    rocm_s: float = 0.0

    def __post_init__(self) -> None:
        _check_kinds("indexer_mixers", self.indexer_mixers)
        for name in ("fixed_s", "per_layer_s", "per_draft_s", "per_indexer_s", "rocm_s"):
            _seconds(name, getattr(self, name))
        if self.dp_attention_s is not None:
            _seconds("dp_attention_s", self.dp_attention_s)
        for name in ("source", "engine", "version", "date"):
            _text(name, getattr(self, name))
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {str(self.mode)[:40]!r}")
        if self.mode == "cuda_graph" and self.per_draft_s:
            raise ValueError("a cuda_graph (no drafting) cost has no per-draft cost")


def draft_passes(method: str, draft_tokens: int) -> int:
    """Draft forwards per verification step: ``draft_tokens`` for autoregressive drafts (``mtp``, ``eagle3``), 1 for
    ``dspark`` (one parallel block pass), 0 for ``none``."""
    if method not in ("none", *MODES[1:]):
        raise ValueError(f"method must be none or one of {', '.join(MODES[1:])}, got {str(method)[:40]!r}")
    if isinstance(draft_tokens, bool) or not isinstance(draft_tokens, int) or not 0 <= draft_tokens <= 64:
        raise ValueError(f"draft_tokens must be a whole number within 0 and 64, got {draft_tokens!r}")
    if method == "none" or draft_tokens == 0:
        return 0
    return draft_tokens if method in _AUTOREGRESSIVE else 1


def _check_kinds(name: str, kinds) -> None:
    """A tuple of mixer-kind names (``mla``, ``gqa``: identifiers; which kinds exist is the model package's business,
    so an unknown name simply matches no layer) or None."""
    if kinds is not None and not (
        isinstance(kinds, tuple)
        and len(kinds) <= 16
        and all(isinstance(k, str) and k.isidentifier() and len(k) <= 40 for k in kinds)
    ):
        raise ValueError(f"{name} must be None or a tuple of mixer kinds (e.g. ('mla',)), got {str(kinds)[:80]}")


def _own_indexer_groups(model: ModelSpec) -> list:
    if not isinstance(model, ModelSpec):
        raise ValueError(f"model must be a ModelSpec, got {type(model).__name__}")
    return [g for g in model.mixers if getattr(g.mixer, "indexer", None) is not None and not g.mixer.indexer.shared]


def indexer_layers(model: ModelSpec, kinds: tuple[str, ...] | None = None) -> int:
    """Layers whose mixer runs a sparse-attention indexer of its own (not one that reuses the last top-k), of the
    mixer ``kinds`` only where given (GLM-5: 78 MLA layers; MiniMax-M3: 57 GQA ones; GLM-5.2: 21 of its 78)."""
    _check_kinds("kinds", kinds)
    return sum(len(g.layers) for g in _own_indexer_groups(model) if kinds is None or g.mixer.kind in kinds)


def indexer_kinds(model: ModelSpec) -> tuple[str, ...]:
    """The mixer kinds (sorted) of ``model``'s layers that run an indexer of their own: ``("mla",)`` for DSA models,
    ``("gqa",)`` for MiniMax-M3's MSA, ``()`` for a model without one."""
    return tuple(sorted({g.mixer.kind for g in _own_indexer_groups(model)}))


def step_overhead_s(
    cost: ServedStepCost, model: ModelSpec, draft_passes: int = 0, attention_dp: int = 1, vendor: str = "nvidia"
) -> float:
    """Seconds a served step of ``model`` adds to the kernel step: ``fixed_s`` (``dp_attention_s`` where
    ``attention_dp`` > 1 and the stack has one) ``+ per_layer_s x layers + per_indexer_s x indexer layers (of
    the cost's ``indexer_mixers``) + per_draft_s x draft_passes``, ``+ rocm_s`` where the GPU's ``vendor`` is
    ``amd`` (e.g. 0.5 ms + 10 us x 61 layers + 0.4 ms x 3 drafts = 2.31 ms, + 3 ms on an MI355X)."""
    if not isinstance(cost, ServedStepCost):
        raise ValueError(f"cost must be a ServedStepCost, got {type(cost).__name__}")
    if not isinstance(model, ModelSpec):
        raise ValueError(f"model must be a ModelSpec, got {type(model).__name__}")
    for name, v, lo, hi in (("draft_passes", draft_passes, 0, 64), ("attention_dp", attention_dp, 1, 100_000)):
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise ValueError(f"{name} must be a whole number within {lo} and {hi}, got {v!r}")
    if not isinstance(vendor, str) or len(vendor) > 40:
        raise ValueError(f"vendor must be a GPU vendor's name (nvidia, amd, ...), got {str(vendor)[:40]!r}")
    if draft_passes and cost.mode == "cuda_graph":
        raise ValueError("draft passes need a drafting mode's cost (mtp, eagle3 or dspark), not cuda_graph")
    fixed = cost.dp_attention_s if attention_dp > 1 and cost.dp_attention_s is not None else cost.fixed_s
    return (
        fixed
        + cost.per_layer_s * model.num_layers
        + cost.per_indexer_s * indexer_layers(model, cost.indexer_mixers)
        + cost.per_draft_s * draft_passes
        + (cost.rocm_s if vendor == "amd" else 0.0)
    )


@functools.lru_cache(maxsize=4)
def _fits(path: Path, mtime_ns: int, size: int) -> tuple[dict[str, dict], dict[str, str]]:
    """The file's fits by stack, and the reason each unfitted mode has none."""
    try:
        doc = load_yaml(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise ValueError(f"{path.name}: not a readable served-step file ({type(e).__name__})") from None
    doc = doc if isinstance(doc, dict) else {}
    fits, not_fitted = doc.get("fits"), doc.get("not_fitted") or {}
    if not isinstance(fits, list) or not isinstance(not_fitted, dict):
        raise ValueError(f"{path.name}: must hold a list 'fits' and a mapping 'not_fitted'")
    by_stack: dict[str, dict] = {}
    for i, f in enumerate(fits):
        if not isinstance(f, dict) or not isinstance(f.get("engine"), str):
            raise ValueError(f"{path.name}: fit {i} needs an 'engine'")
        if f["engine"] in by_stack:
            raise ValueError(f"{path.name}: two fits for engine {f['engine']!r}")
        by_stack[f["engine"]] = f
    return by_stack, {str(k): str(v) for k, v in not_fitted.items()}


def served_step_cost(stack: str, mode: str = "cuda_graph", path: str | Path | None = None) -> ServedStepCost:
    """The fitted per-step costs of ``stack`` (sglang, vllm, trtllm) in ``mode`` (:data:`MODES`), read from
    ``catalogs/served_step.yaml`` (or ``path``; cached until the file changes). A stack or mode without a fit
    raises ValueError naming the ones there are, or why the mode has none."""
    by_stack, not_fitted = _fits(*file_stamp(path, SERVED_STEP_PATH, "served-step file"))
    if not isinstance(mode, str) or mode not in MODES:
        why = not_fitted.get(str(mode)) if isinstance(mode, str) else None
        raise ValueError(
            f"no fitted served-step cost for mode {str(mode)[:40]!r}"
            + (f": {why}" if why else f"; modes: {', '.join(MODES)}")
        )
    if not isinstance(stack, str) or stack not in by_stack:
        raise ValueError(
            f"no fitted served-step cost for stack {str(stack)[:40]!r}; fitted: {', '.join(sorted(by_stack))}"
        )
    f = by_stack[stack]
    if mode != "cuda_graph" and mode not in (f.get("drafting_modes") or ()):
        raise ValueError(f"stack {stack!r} has no fitted {mode} cost; fitted drafting modes: {f.get('drafting_modes')}")
    kinds = f.get("indexer_mixers")
    if kinds is not None and not isinstance(kinds, list):
        raise ValueError(f"served-step fit for {stack!r}: indexer_mixers must be a list of mixer kinds")
    try:
        return ServedStepCost(
            indexer_mixers=tuple(kinds) if kinds is not None else None,
            fixed_s=f["fixed_s"],
            per_layer_s=f["per_layer_s"],
            per_draft_s=f["per_draft_s"] if mode != "cuda_graph" else 0.0,
            per_indexer_s=f.get("per_indexer_s", 0.0),
            dp_attention_s=f.get("dp_attention_s"),
            rocm_s=f.get("rocm_s", 0.0),
            source=f"{f['form']}, fitted on {len(f['points'])} measurements of catalogs/served_step.yaml "
            f"(leave-one-out median {f['loo_median_error']:.0%}, max {f['loo_max_error']:.0%})",
            engine=stack,
            version=f["holds_for"]["versions"],
            date=f["holds_for"]["dates"],
            mode=mode,
        )
    except (KeyError, TypeError) as e:
        raise ValueError(f"served-step fit for {stack!r} lacks or mistypes {e}") from None


def served_step_for(stack: str, method: str) -> ServedStepCost:
    """The costs a deployment of ``stack`` drafting with ``method`` (``none``, ``mtp``, ``eagle3``, ``dspark``, or any
    other speculation method) pays: the drafting mode's where the stack has it fitted, else the plain CUDA-graph
    step's (its drafts then priced at the draft's own cost by the caller)."""
    if not isinstance(method, str):
        raise ValueError(f"method must be a text, got {type(method).__name__}")
    if method in MODES[1:]:
        try:
            return served_step_cost(stack, method)
        except ValueError:
            pass
    return served_step_cost(stack)
