"""Parallel layouts: which are valid for a model, the default one for a cluster, pipeline stages and what
each stage holds.

A replica is split as attention TP x attention DP = expert TP x EP GPUs per pipeline stage, times PP
stages, times DP replicas (:class:`core.deployment.specs.ParallelLayout`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from core._util.checks import is_whole, whole
from core._util.memo import by_identity
from core.deployment.specs import ParallelLayout, Precision
from core.model import ModelSpec

__all__ = [
    "StageCounts",
    "attention_tp_problems",
    "check_layout",
    "dcp_problems",
    "default_layout",
    "divisors",
    "fitting_tp",
    "pipeline_stages",
    "quant_split_problems",
    "sequences_per_replica",
    "stage_counts",
]

# Block / group width along a split weight dimension that a quantised checkpoint's kernels need whole on
# every rank: NVFP4's 16-element groups (inherent to the format) and FP8's 128 x 128 blocks (the FP8
# releases of MoE models: DeepSeek-V3/R1, Qwen3-FP8, Kimi K2, GLM FP8, MiniMax; vLLM refuses "not divisible
# by weight quantization block_n = 128"). Routed experts are held to both; dense and shared FFNs to FP8's
# only when the model's own checkpoint is block-FP8 (an online per-tensor FP8 of an older model has no
# blocks). MXFP4 is left out: the engines pad MXFP4 experts to their tile width on a split (vLLM and SGLang
# run gpt-oss at expert TP 4 and 8, 2880 / 8 = 360 wide).
QUANT_BLOCK_WIDTH = {"fp8": 128, "nvfp4": 16}


def sequences_per_replica(sequences: int, layout: ParallelLayout) -> int:
    """The busiest replica's share of a deployment's ``sequences`` over the layout's ``dp`` replicas:
    ``ceil(sequences / dp)`` (64 over 3 replicas: 22). Intensity, the Report and Fit take the same split."""
    sequences = whole("sequences", sequences, 1, 10**9)
    if not isinstance(layout, ParallelLayout):
        raise ValueError(f"layout must be a ParallelLayout, got {type(layout).__name__}")
    return -(-sequences // max(layout.dp, 1))


def divisors(n: int) -> list[int]:
    """Every divisor of ``n``, ascending."""
    n = whole("n", n, 1, 10**12)
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def attention_tp_problems(model: ModelSpec, tp: int) -> list[str]:
    """Why attention TP ``tp`` cannot split the model's mixers (each kind says for itself; no repeats)."""
    tp = whole("tp", tp, 1, 100_000)
    out: list[str] = []
    for g in model.mixers:
        out += [p for p in g.mixer.tp_problems(tp) if p not in out]
    return out


def dcp_problems(model: ModelSpec, tp: int, dcp: int) -> list[str]:
    """Why decode context parallelism ``dcp`` cannot run beside attention TP ``tp`` (vLLM's rules): every layer
    a kind DCP shards (dense MLA, full-attention GQA), and ``dcp`` dividing the copies TP makes of each KV head,
    ``(tp // kv_heads) % dcp == 0`` (MLA's latent counts as one head: any divisor of TP). Qwen3-235B's 4 KV
    heads at TP 8 allow DCP 2."""
    tp, dcp = whole("tp", tp, 1, 100_000), whole("dcp", dcp, 1, 100_000)
    if dcp == 1:
        return []
    kinds = sorted({g.mixer.label() for g in model.mixers if g.mixer.dcp_kv_heads() is None})
    if kinds:
        return [
            f"decode context parallelism shards dense MLA and full-attention GQA caches only, not {', '.join(kinds)}"
        ]
    heads = max(g.mixer.dcp_kv_heads() for g in model.mixers)
    copies = tp // heads
    if tp % dcp or copies < dcp or copies % dcp:
        return [
            f"DCP {dcp} needs a multiple of {dcp} copies of each of the {heads} KV head{'s' if heads > 1 else ''}: "
            f"attention TP {tp} makes {copies} (tp // kv_heads)"
        ]
    return []


def fitting_tp(model: ModelSpec, tp: int) -> int:
    """The attention TP ``model`` runs at beside a model at ``tp`` (a separate speculative draft): the same
    when its mixers split that way, else 1."""
    return tp if not attention_tp_problems(model, whole("tp", tp, 1, 100_000)) else 1


def quant_split_problems(model: ModelSpec, layout: ParallelLayout, precision: Precision | str) -> list[str]:
    """Splits a quantised checkpoint cannot run: a routed expert's width over expert TP, and the dense /
    shared FFN width over attention TP, must be whole blocks of the dtype (:data:`QUANT_BLOCK_WIDTH`, which
    says when each applies; the checkpoint's own ``weight_block_size`` where it names one). Qwen3-235B-A22B FP8 at expert TP 8: 1536 / 8 = 192, not a multiple of 128."""
    precision = Precision.of(precision)
    out = []
    e = model.moe
    if e is not None and layout.expert_tp > 1:
        block = QUANT_BLOCK_WIDTH.get(precision.expert_dtype)
        width = e.expert_intermediate_size / layout.expert_tp
        if block and width % block:
            out.append(
                f"expert TP {layout.expert_tp} splits the {e.expert_intermediate_size}-wide experts into "
                f"{width:g}-wide slices, not whole {block}-wide {precision.expert_dtype} blocks"
            )
    block = QUANT_BLOCK_WIDTH.get(precision.weights)
    own = (model.checkpoint_precision or {}).get("weights")
    if precision.weights == "fp8" and own != "fp8":
        block = None  # not the published block-FP8 checkpoint: an online FP8 without blocks
    elif block and own == precision.weights and model.checkpoint_block_width:
        block = model.checkpoint_block_width  # the checkpoint's own blocks (DeepSeek-V4.1-Flash: 32 x 32)
    if block and layout.attention_tp > 1:
        for what, width in (
            ("dense FFN", model.dense_intermediate_size if model.num_dense_layers else 0),
            ("shared expert", e.shared_intermediate_size if e is not None and e.n_shared_experts else 0),
        ):
            part = width / layout.attention_tp
            if width and part % block:
                out.append(
                    f"attention TP {layout.attention_tp} splits the {width}-wide {what} into {part:g}-wide "
                    f"slices, not whole {block}-wide {precision.weights} blocks"
                )
    return out


def check_layout(
    model: ModelSpec, layout: ParallelLayout, redundant_experts: int = 0, precision: Precision | str | None = None
) -> list[str]:
    """Problems that make a layout invalid for a model (empty list: valid); with ``precision`` also the
    splits its quantised weights cannot run (:func:`quant_split_problems`)."""
    if not (is_whole(redundant_experts) and 0 <= redundant_experts <= 100_000):
        raise ValueError(f"redundant_experts must be a whole number in 0..100,000, got {redundant_experts!r}")
    problems = attention_tp_problems(model, layout.attention_tp) + dcp_problems(model, layout.attention_tp, layout.dcp)
    if layout.pp > model.num_layers:
        problems.append(f"PP {layout.pp} exceeds the {model.num_layers} layers")
    if model.moe is not None:
        slots = model.moe.n_routed_experts + redundant_experts
        if slots % layout.ep:
            problems.append(
                f"EP {layout.ep} does not divide the {model.moe.n_routed_experts} routed experts"
                + (f" + {redundant_experts} redundant" if redundant_experts else "")
            )
        if model.moe.expert_intermediate_size % layout.expert_tp:
            problems.append(
                f"expert TP {layout.expert_tp} does not divide the expert width {model.moe.expert_intermediate_size}"
            )
    elif layout.ep > 1:
        problems.append("a dense model has no experts to spread over EP > 1")
    if precision is not None:
        problems += quant_split_problems(model, layout, precision)
    return problems


def default_layout(
    model: ModelSpec, total_gpus: int, gpus_per_node: int = 8, precision: Precision | str | None = None
) -> ParallelLayout:
    """TP inside a node (the largest power of two <= 8 that divides the GPUs and the heads, and with
    ``precision`` splits its quantised weights into whole blocks), PP across nodes; MoE experts spread
    with EP = TP (vLLM's ``--tensor-parallel-size N --enable-expert-parallel``, ``--pipeline-parallel-size``
    across nodes). The Layouts page searches for better ones."""
    if total_gpus < 1:
        raise ValueError(f"total_gpus must be >= 1, got {total_gpus}")
    limit = max(1, min(8, gpus_per_node, total_gpus))
    tp = 1
    for t in (8, 4, 2, 1):
        if t > limit or total_gpus % t:
            continue
        if not check_layout(model, _tp_layout(model, t, total_gpus // t), precision=precision):
            tp = t
            break
    return _tp_layout(model, tp, total_gpus // tp)


def _tp_layout(model: ModelSpec, tp: int, rest: int) -> ParallelLayout:
    """TP ``tp`` with the other ``rest`` GPU groups as pipeline stages, at most one per layer: beyond the
    layer count (a cluster larger than TP x layers) the remainder becomes data-parallel replicas."""
    pp = max(d for d in range(1, min(rest, model.num_layers) + 1) if rest % d == 0)
    dp = rest // pp
    if model.moe is None:
        return ParallelLayout(attention_tp=tp, ep=1, expert_tp=tp, pp=pp, dp=dp)
    ep = tp if model.moe.n_routed_experts % tp == 0 else 1
    return ParallelLayout(attention_tp=tp, ep=ep, expert_tp=tp // ep, pp=pp, dp=dp)


def pipeline_stages(num_layers: int, pp: int) -> list[range]:
    """Contiguous pipeline stages, the first ``num_layers % pp`` one layer longer."""
    for name, v in (("num_layers", num_layers), ("pp", pp)):
        if not (is_whole(v) and 1 <= v <= 10_000):
            raise ValueError(f"{name} must be a whole number in 1..10,000, got {v!r}")
    base, extra = divmod(num_layers, pp)
    out, start = [], 0
    for s in range(pp):
        n = base + (1 if s < extra else 0)
        out.append(range(start, start + n))
        start += n
    return out


@dataclass(frozen=True)
class StageCounts:
    """What a run of layers (a pipeline stage, or the whole model) holds: layers, dense-FFN, FFN-free and
    MoE layers, and the layers of each mixer group (in ``model.mixers`` order)."""

    layers: int
    dense: int
    ffn_free: int
    moe: int
    per_group: tuple[int, ...]


def stage_counts(model: ModelSpec, stage: range | None = None) -> StageCounts:
    """The :class:`StageCounts` of ``stage`` (default: every layer). Cached: the layout search asks for
    the same few stages thousands of times."""
    stage = range(model.num_layers) if stage is None else stage
    if not (isinstance(stage, range) and stage.step == 1 and 0 <= stage.start <= stage.stop <= model.num_layers):
        raise ValueError(f"stage must be a range of layers within 0..{model.num_layers}, got {stage!r}")
    return _stage_counts(model, stage.start, stage.stop)


@by_identity(4096)
def _stage_counts(model: ModelSpec, start: int, stop: int) -> StageCounts:
    def inside(layers) -> int:
        return sum(1 for i in layers if start <= i < stop)

    dense, free = inside(model.dense_layers), inside(model.ffn_free_layers)
    moe = (stop - start - dense - free) if model.moe is not None else 0
    return StageCounts(stop - start, dense, free, moe, tuple(inside(g.layers) for g in model.mixers))
