"""Side by side: the planner's step-time model against NVIDIA aiconfigurator (AIC) 0.12.0 (issue #18).

AIC is an optional, separate tool: the app never imports it. Run this from the repository root with an
interpreter that has ``aiconfigurator`` installed (plus the planner's numpy / pydantic / pyyaml)::

    /tmp/aicenv/bin/python -m bench.aic_compare              # writes catalogs/validation/aic_comparison.csv
    /tmp/aicenv/bin/python -m bench.aic_compare --markdown   # the same summary as markdown (bench/RESULTS.md)
    /tmp/aicenv/bin/python -m bench.aic_compare --only b200 --no-write

Without aiconfigurator it prints one line and exits 0, so ``python -m bench.aic_compare`` in the project's
own venv is harmless. Tests never import this module.

Method (the review's, ``shared/reviews/aiconfigurator-comparison.md`` section 2): AIC
``cli_estimate(mode="static")`` runs one batch of ``bs = batch / attention_dp`` requests per attention-DP
rank, prefilled in one pass (TTFT), then OSL decode steps (TPOT = mean step). The planner's
``core.perf.step_time`` (no overlap) times a decode step with ``batch / GPUs`` sequences per GPU at context
ISL + OSL/2 and a prefill step with ``batch x ISL / GPUs`` prompt tokens per GPU; both sides use the same
model, GPU, layout, serving stack, weights (FP8 block; gpt-oss MXFP4 experts) and KV dtype, and the planner
is told AIC's MoE kernel path (fused Triton, DeepEP + DeepGEMM, or TensorRT-LLM). AIC is run twice: as it
ships (power-law expert load) and with balanced routing (what the planner assumes). ``[DeepEP]`` rows force
AIC's wide-EP graph for an intra-node layout (``cli estimate`` would price the fused Triton path there);
cross-node EP always takes it.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import datetime as dt
import importlib.metadata
import logging
import math
import shutil
import statistics
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CSV_OUT = ROOT / "catalogs" / "validation" / "aic_comparison.csv"
ISL, OSL = 4000, 1000
GROUPS = ("attention_tp", "dp_ep", "blackwell", "one_gpu")
PHASES = ("decode", "prefill")
BLACKWELL = ("b200", "b300", "gb200", "gb300")
TARGET_DECODE, TARGET_GROUP = 15.0, 25.0  # % (issue #18)

# planner catalog ids -> AIC's names
AIC_SYSTEMS = {
    "h100-sxm": "h100_sxm",
    "h200": "h200_sxm",
    "b200": "b200_sxm",
    "b300": "b300_sxm",
    "gb200": "gb200",
    "gb300": "gb300",
}
AIC_MODELS = {
    "deepseek-v3": "deepseek-ai/DeepSeek-V3",
    "qwen3-235b-a22b": "Qwen/Qwen3-235B-A22B-FP8",
    "qwen3-30b-a3b": "Qwen/Qwen3-30B-A3B-FP8",
    "gpt-oss-120b": "openai/gpt-oss-120b",
    "kimi-k2": "",  # a local folder holding AIC's vendored config (AIC would look the HF id up online)
}
KIMI_CONFIG = "moonshotai--Kimi-K2-Instruct_config.json"
AIC_KV = {"bfloat16": "bf16", "fp8": "fp8"}
# planner (weights, routed experts) where they differ from FP8 block weights throughout
PLANNER_WEIGHTS = {"gpt-oss-120b": ("bf16", "mxfp4")}


@dataclass(frozen=True)
class Config:
    """One deployment, run through both tools: ``batch`` is the global number of concurrent sequences."""

    name: str
    model: str
    gpu: str
    stack: str
    tp: int
    dp: int
    ep: int
    etp: int
    batch: int
    deepep: bool = False  # force AIC's wide-EP (DeepEP + DeepGEMM) graph for an intra-node layout
    kv: str | None = "bfloat16"  # AIC kvcache_quant_mode; None: AIC's choice (its DeepSeek wide-EP tables are fp8)
    moe_quant: str | None = None  # AIC moe_quant_mode; None: inferred from the checkpoint

    @property
    def gpus(self) -> int:
        return self.tp * self.dp

    @property
    def group(self) -> str:
        if self.gpu in BLACKWELL:
            return "blackwell"
        if self.gpus == 1:
            return "one_gpu"
        return "attention_tp" if self.tp > 1 else "dp_ep"

    def layout_label(self, wide_ep: bool) -> str:
        parts = [f"TP{self.tp}"] + ([f"DP{self.dp}"] if self.dp > 1 else [])
        parts += [f"EP{self.ep}"] if self.ep > 1 else []
        parts += [f"ETP{self.etp}"] if self.etp > 1 else []
        tag = " [DeepEP]" if wide_ep and self.stack == "sglang" else " [wide EP]" if wide_ep else ""
        return " ".join(parts) + tag


def _grid() -> list[Config]:
    """~40 configurations covering the review's groups (ISL 4000 / OSL 1000 throughout)."""
    dsv3, q235, q30, oss, kimi = "deepseek-v3", "qwen3-235b-a22b", "qwen3-30b-a3b", "gpt-oss-120b", "kimi-k2"
    g: list[Config] = []
    # attention TP on Hopper
    g += [Config(f"dsv3-h200-tp8-b{b}", dsv3, "h200", "sglang", 8, 1, 1, 8, b) for b in (1, 16, 64, 256)]
    g += [
        Config("dsv3-h200-tp8ep8-b64", dsv3, "h200", "sglang", 8, 1, 8, 1, 64),
        Config("q235-h200-tp8ep8-b64", q235, "h200", "sglang", 8, 1, 8, 1, 64),
        Config("q235-h100-tp8ep8-b64", q235, "h100-sxm", "sglang", 8, 1, 8, 1, 64),
        Config("q235-h100-tp4-b16", q235, "h100-sxm", "sglang", 4, 1, 1, 4, 16),
        Config("q235-h200-tp4-b16", q235, "h200", "sglang", 4, 1, 1, 4, 16),
        Config("q235-h200-tp4-b64", q235, "h200", "sglang", 4, 1, 1, 4, 64),
        Config("q30-h200-tp2-b64", q30, "h200", "sglang", 2, 1, 1, 2, 64),
    ]
    # attention DP x EP on Hopper: AIC's fused Triton path, its DeepEP graph, TensorRT-LLM
    g += [Config(f"dsv3-h200-dp8ep8-b{b}", dsv3, "h200", "sglang", 1, 8, 8, 1, b) for b in (8, 64, 256, 1024)]
    g += [
        Config(f"dsv3-h200-dp8ep8-b{b}-deepep", dsv3, "h200", "sglang", 1, 8, 8, 1, b, deepep=True, kv=None)
        for b in (64, 256, 1024)
    ]
    g += [
        Config("dsv3-h200-dp8ep8-b256-trt", dsv3, "h200", "trtllm", 1, 8, 8, 1, 256),
        Config("q235-h200-dp8ep8-b256", q235, "h200", "sglang", 1, 8, 8, 1, 256),
        Config("dsv3-h100-dp16ep16-b512", dsv3, "h100-sxm", "sglang", 1, 16, 16, 1, 512, kv=None),
        Config("kimik2-h200-dp8ep8-b256-trt", kimi, "h200", "trtllm", 1, 8, 8, 1, 256),
    ]
    # Blackwell (any layout)
    g += [Config(f"dsv3-b200-dp8ep8-b{b}-trt", dsv3, "b200", "trtllm", 1, 8, 8, 1, b) for b in (64, 256, 1024)]
    g += [Config(f"dsv3-b200-tp8-b{b}-trt", dsv3, "b200", "trtllm", 8, 1, 1, 8, b) for b in (16, 64)]
    g += [
        Config("dsv3-b300-dp8ep8-b256-trt", dsv3, "b300", "trtllm", 1, 8, 8, 1, 256),
        Config("dsv3-b300-tp8-b64-trt", dsv3, "b300", "trtllm", 8, 1, 1, 8, 64),
        Config("dsv3-gb200-dp4ep4-b128-trt", dsv3, "gb200", "trtllm", 1, 4, 4, 1, 128),
        Config("dsv3-gb200-dp16ep16-b1024", dsv3, "gb200", "sglang", 1, 16, 16, 1, 1024, kv=None),
        Config("dsv3-gb200-dp32ep32-b2048", dsv3, "gb200", "sglang", 1, 32, 32, 1, 2048, kv=None),
        Config("q235-b200-tp8ep8-b64-trt", q235, "b200", "trtllm", 8, 1, 8, 1, 64),
        # AIC infers weight-only W4A16 MXFP4 experts; the planner runs MXFP4 natively on Blackwell, as
        # AIC's W4A8 (MXFP4 x MXFP8) TensorRT-LLM kernel does: both shown
        Config("gptoss120-b200-tp1-b64-trt", oss, "b200", "trtllm", 1, 1, 1, 1, 64),
        Config("gptoss120-b200-tp1-b64-trt-w4a8", oss, "b200", "trtllm", 1, 1, 1, 1, 64, moe_quant="w4a8_mxfp4_mxfp8"),
    ]
    # one GPU
    g += [
        Config("q30-h100-tp1-b1", q30, "h100-sxm", "sglang", 1, 1, 1, 1, 1),
        Config("q30-h200-tp1-b1", q30, "h200", "sglang", 1, 1, 1, 1, 1),
        Config("q30-h200-tp1-b64", q30, "h200", "sglang", 1, 1, 1, 1, 64),
        Config("gptoss120-h200-tp1-b16", oss, "h200", "sglang", 1, 1, 1, 1, 16),
        Config("gptoss120-h200-tp1-b64", oss, "h200", "sglang", 1, 1, 1, 1, 64),
    ]
    return g


# ---------------------------------------------------------------------------------------------- AIC side


@dataclass(frozen=True)
class AICResult:
    """One static estimate: TTFT / TPOT in ms, per-op ms (decode: per step; prefill: the whole prefill)."""

    ms: dict[str, float]  # phase -> TPOT (decode) or TTFT (prefill)
    parts: dict[str, dict[str, float]]  # phase -> op -> ms
    kv: str  # planner dtype name of the KV cache AIC priced
    wide_ep: bool  # AIC priced its wide-EP (DeepEP / all-to-all) MoE graph
    fallback: bool  # AIC substituted a smaller measured EP for the all-to-all
    oom: bool  # AIC flags the static batch as not fitting (it still times it)


def _ops(latency: dict[str, float], total_ms: float, prefix: str) -> dict[str, float]:
    """AIC's per-op latencies scaled to sum to ``total_ms``, names without the phase prefix."""
    s = sum(latency.values())
    scale = total_ms / s if s > 0 else 0.0
    return {k.removeprefix(prefix): v * scale for k, v in latency.items() if v > 0}


class AIC:
    """aiconfigurator's ``cli_estimate`` with two switches it has no argument for: balanced expert routing
    (``ModelConfig.workload_distribution``) and the wide-EP graph for an intra-node EP layout (the coverage
    snapshot its own search hands to the MoE communication resolver). Patches are undone by ``close``."""

    def __init__(self) -> None:
        from aiconfigurator.cli import api

        self.api = api
        self._build, self._resolve = api._build_model_config, api.resolve_model_config_moe_comm
        self.distribution: str | None = None
        self.force_wide_ep = False
        self.resolved: dict[str, str] | None = None
        api._build_model_config = self._build_model_config
        api.resolve_model_config_moe_comm = self._resolve_moe_comm
        self._tmp = tempfile.TemporaryDirectory(prefix="aic-kimi-")
        self.kimi = self._kimi_folder(Path(self._tmp.name))

    def close(self) -> None:
        self.api._build_model_config, self.api.resolve_model_config_moe_comm = self._build, self._resolve
        self._tmp.cleanup()

    @staticmethod
    def _kimi_folder(folder: Path) -> str:
        import aiconfigurator_core

        shutil.copy(Path(aiconfigurator_core.__file__).parent / "model_configs" / KIMI_CONFIG, folder / "config.json")
        return str(folder)

    def _build_model_config(self, *args: Any, **kwargs: Any) -> Any:
        mc = self._build(*args, **kwargs)
        if self.distribution:
            mc.workload_distribution = self.distribution
        return mc

    def _resolve_moe_comm(self, model_config: Any, **kwargs: Any) -> dict[str, str] | None:
        if self.force_wide_ep:
            kwargs["coverage_snapshot"] = self._wide_ep_coverage(
                model_config, kwargs["model_path"], kwargs["backend_name"], kwargs["database"]
            )
        self.resolved = self._resolve(model_config, **kwargs)
        return self.resolved

    @staticmethod
    def _wide_ep_coverage(model_config: Any, model_path: str, backend: str, db: Any) -> dict[str, dict[str, set[int]]]:
        """``{phase: {comm backend: {EP sizes}}}`` with all-to-all and EP-compute data: the snapshot AIC's
        search (``Task._compute_large_ep_coverage``) builds, here for one exact configuration."""
        from aiconfigurator.sdk.models import _get_model_info
        from aiconfigurator.sdk.models.blocks.moe import MoEBlockShape
        from aiconfigurator.sdk.models.helpers import _apply_model_quant_defaults
        from aiconfigurator.sdk.moe_comm_resolver import a2a_covers_parallel, moe_compute_coverage
        from aiconfigurator.sdk.operations.moe_comm import MOE_A2A_BACKENDS, nodes_for

        info = _get_model_info(model_path)
        _apply_model_quant_defaults(
            model_config, info.get("raw_config", {}), info["architecture"], backend, worker_name=model_path
        )
        quant, shape = model_config.moe_quant_mode, MoEBlockShape.from_model_info(info)
        per_node = int(db.system_spec["node"]["num_gpus_per_node"])
        sm = db.system_spec["gpu"].get("sm_version")
        coverage: dict[str, dict[str, set[int]]] = {}
        for phase in ("context", "generation"):
            a2a = db.moe_a2a_coverage(shape.hidden_size, shape.topk, shape.num_experts, quant, phase)
            compute = moe_compute_coverage(
                db,
                backend_name=backend,
                hidden_size=shape.hidden_size,
                inter_size=shape.moe_inter_size,
                topk=shape.topk,
                num_experts=shape.num_experts,
                quant_mode=quant,
                phase=phase,
            )
            for name, spec in MOE_A2A_BACKENDS.items():
                if backend not in spec.frameworks or phase not in spec.inference_phases:
                    continue
                eps = {
                    ep
                    for ep in compute
                    if a2a_covers_parallel(
                        a2a.get(name, set()),
                        framework=backend,
                        comm_backend=name,
                        moe_ep_size=ep,
                        expected_nodes=nodes_for(ep, per_node),
                        gpus_per_node=per_node,
                    )
                    and spec.feasible(
                        topk=shape.topk,
                        num_experts=shape.num_experts,
                        moe_tp_size=1,
                        moe_ep_size=ep,
                        sm_version=int(sm) if sm is not None else None,
                    )
                }
                if eps:
                    coverage.setdefault(phase, {})[name] = eps
        return coverage

    def estimate(self, c: Config, *, balanced: bool) -> AICResult:
        self.distribution = "balanced" if balanced else None
        self.force_wide_ep, self.resolved = c.deepep, None
        r = self.api.cli_estimate(
            self.kimi if c.model == "kimi-k2" else AIC_MODELS[c.model],
            AIC_SYSTEMS[c.gpu],
            mode="static",
            backend_name=c.stack,
            isl=ISL,
            osl=OSL,
            batch_size=c.batch // c.dp,
            tp_size=c.tp,
            attention_dp_size=c.dp,
            moe_tp_size=c.etp,
            moe_ep_size=c.ep,
            kvcache_quant_mode=c.kv,
            moe_quant_mode=c.moe_quant,
        )
        s = r.summary
        return AICResult(
            ms={"decode": r.tpot, "prefill": r.ttft},
            parts={
                "decode": _ops(s.get_generation_latency_dict(), r.tpot, "generation_"),
                "prefill": _ops(s.get_context_latency_dict(), r.ttft, "context_"),
            },
            kv=AIC_KV[r.raw["kvcache"]],
            wide_ep=bool(self.resolved),
            fallback=bool(r.moe_comm_fallbacks),
            oom=bool(s.check_oom()),
        )


@contextlib.contextmanager
def aic_session() -> Iterator[AIC]:
    for name in ("aiconfigurator", "aiconfigurator_core"):
        logging.getLogger(name).setLevel(logging.ERROR)  # data-fallback notices, one per table
    aic = AIC()
    try:
        yield aic
    finally:
        aic.close()


# ------------------------------------------------------------------------------------------ planner side


@dataclass(frozen=True)
class PlannerRun:
    """The planner's step (ms) and its components (ms) for decode and prefill."""

    ms: dict[str, float]  # phase -> step
    parts: dict[str, dict[str, float]]  # phase -> component -> ms


def kernel_path(c: Config, wide_ep: bool) -> str:
    """The planner's MoE kernel path for AIC's: TensorRT-LLM its own; SGLang DeepEP + DeepGEMM on AIC's
    wide-EP graph, its fused Triton MoE otherwise."""
    if c.stack == "trtllm":
        return "trtllm"
    return "deepep" if wide_ep else "fused"


def planner_run(c: Config, kv: str, path: str, gpu: str | None = None) -> PlannerRun:
    from core import perf
    from core.catalog import load_catalog
    from core.deployment.bundle import Deployment
    from core.deployment.specs import ParallelLayout, Precision

    cat = load_catalog()
    gpu = gpu or c.gpu
    weights, experts = PLANNER_WEIGHTS.get(c.model, ("fp8", None))
    prec = Precision(weights=weights, routed_experts=experts, kv_cache=kv, dispatch="fp8")
    layout = ParallelLayout(attention_tp=c.tp, attention_dp=c.dp, ep=c.ep, expert_tp=c.etp)
    eff = cat.efficiency_for(gpu, c.stack)
    model, spec = cat.model(c.model), cat.gpu(gpu)

    loads = {"decode": (c.batch / c.gpus, ISL + OSL // 2), "prefill": (c.batch * ISL / c.gpus, ISL)}
    steps = {
        phase: perf.step_time(
            Deployment(model, spec, layout, prec, eff), perf.StepConfig(phase, t, ctx, kernel_path=path)
        )
        for phase, (t, ctx) in loads.items()
    }
    return PlannerRun(
        {phase: st.step_s * 1e3 for phase, st in steps.items()},
        {phase: {k: v * 1e3 for k, v in st.components.items() if v > 0} for phase, st in steps.items()},
    )


# ----------------------------------------------------------------------------------------------- rows


@dataclass(frozen=True)
class Row:
    """One configuration and phase: TPOT (decode) or TTFT (prefill) in ms from each side."""

    config: Config
    layout: str
    phase: str
    aic_ms: float
    aic_balanced_ms: float | None
    planner_ms: float
    aic_parts: dict[str, float]
    planner_parts: dict[str, float]
    path: str
    kv: str
    notes: str

    @property
    def ratio(self) -> float:
        """AIC / planner: > 1 means the planner predicts faster."""
        return self.aic_ms / self.planner_ms

    @property
    def ratio_balanced(self) -> float | None:
        return None if self.aic_balanced_ms is None else self.aic_balanced_ms / self.planner_ms


def run_config(aic: AIC, c: Config) -> list[Row]:
    base = aic.estimate(c, balanced=False)
    try:
        bal: AICResult | None = aic.estimate(c, balanced=True)
    except Exception as e:  # AIC has no balanced table for this shape
        print(f"  {c.name}: no balanced-routing estimate ({type(e).__name__})", file=sys.stderr)
        bal = None
    path = kernel_path(c, base.wide_ep)
    plan = planner_run(c, base.kv, path)
    notes = [f"KV {base.kv}", f"planner path {path}"]
    notes += ["AIC all-to-all measured at a smaller EP"] if base.fallback else []
    notes += ["AIC flags OOM"] if base.oom else []
    return [
        Row(
            config=c,
            layout=c.layout_label(base.wide_ep),
            phase=phase,
            aic_ms=base.ms[phase],
            aic_balanced_ms=bal.ms[phase] if bal else None,
            planner_ms=plan.ms[phase],
            aic_parts=base.parts[phase],
            planner_parts=plan.parts[phase],
            path=path,
            kv=base.kv,
            notes=", ".join(notes),
        )
        for phase in PHASES
    ]


def run_grid(aic: AIC, grid: list[Config]) -> tuple[list[Row], list[str]]:
    rows: list[Row] = []
    skipped: list[str] = []
    for c in grid:
        try:
            rows += run_config(aic, c)
        except Exception as e:  # AIC has no data for it: report, keep going
            skipped.append(f"{c.name}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
            print(f"  skipped {skipped[-1]}", file=sys.stderr)
    return rows, skipped


# -------------------------------------------------------------------------------------------- summary


def pct(ratio: float) -> float:
    """|log ratio| as a % difference (a 2x gap either way is 100%)."""
    return (math.exp(abs(math.log(ratio))) - 1.0) * 100.0


@dataclass(frozen=True)
class Stat:
    label: str
    n: int
    median_pct: float
    max_pct: float
    median_ratio: float
    n_bal: int
    median_pct_bal: float | None
    max_pct_bal: float | None
    median_ratio_bal: float | None


def stat(label: str, rows: list[Row]) -> Stat:
    ratios = [r.ratio for r in rows]
    bal = [r.ratio_balanced for r in rows if r.ratio_balanced is not None]

    def med_pct(xs: list[float]) -> float | None:
        return statistics.median(pct(x) for x in xs) if xs else None

    return Stat(
        label,
        len(ratios),
        med_pct(ratios) or 0.0,
        max(pct(x) for x in ratios),
        statistics.median(ratios),
        len(bal),
        med_pct(bal),
        max((pct(x) for x in bal), default=None),
        statistics.median(bal) if bal else None,
    )


def summary(rows: list[Row]) -> list[Stat]:
    out = []
    for phase in PHASES:
        ph = [r for r in rows if r.phase == phase]
        if ph:
            out.append(stat(f"{phase}, all", ph))
        for g in GROUPS:
            sel = [r for r in ph if r.config.group == g]
            if sel:
                out.append(stat(f"{phase}, {g}", sel))
    return out


def target_lines(stats: list[Stat]) -> list[str]:
    by = {s.label: s for s in stats}
    lines = []

    def check(label: str, target: float, what: str) -> None:
        s = by.get(label)
        if s is None or s.median_pct_bal is None:
            return
        ok = "met" if s.median_pct_bal <= target else "NOT met"
        lines.append(
            f"{what}: median {s.median_pct_bal:.0f}% vs AIC balanced ({s.median_pct:.0f}% vs AIC as shipped), "
            f"target <= {target:.0f}%: {ok}"
        )

    check("decode, all", TARGET_DECODE, "decode, all rows")
    for g in ("attention_tp", "dp_ep", "blackwell", "one_gpu"):
        check(f"decode, {g}", TARGET_GROUP, f"decode, {g}")
    check("prefill, all", TARGET_GROUP, "prefill, all rows")
    for g in GROUPS:
        check(f"prefill, {g}", TARGET_GROUP, f"prefill, {g}")
    return lines


def top(parts: dict[str, float], n: int = 4) -> str:
    return ", ".join(f"{k} {v:,.2f}" for k, v in sorted(parts.items(), key=lambda kv: -kv[1])[:n])


def disagreements(rows: list[Row]) -> list[str]:
    """The largest disagreement of each phase and group, largest first."""
    worst: dict[tuple[str, str], Row] = {}
    for r in rows:
        key = (r.phase, r.config.group)
        if key not in worst or abs(math.log(r.ratio)) > abs(math.log(worst[key].ratio)):
            worst[key] = r
    out = []
    for r in sorted(worst.values(), key=lambda r: -abs(math.log(r.ratio))):
        bal = f" (balanced {r.aic_balanced_ms:,.1f})" if r.aic_balanced_ms is not None else ""
        unit = "ms per step" if r.phase == "decode" else "ms for the whole prefill"
        out.append(
            f"{r.config.name} {r.phase} ({r.layout}, {r.config.stack}): AIC {r.aic_ms:,.1f}{bal} vs planner "
            f"{r.planner_ms:,.1f} ms, ratio {r.ratio:.2f}; {unit}: planner {top(r.planner_parts)}; "
            f"AIC {top(r.aic_parts)}"
        )
    return out


@dataclass(frozen=True)
class Pair:
    """The planner on H200 and B200 for one layout, stack, kernel path and load: ms per phase."""

    model: str
    layout: str
    stack: str
    path: str
    batch: int
    h200: dict[str, float]
    b200: dict[str, float]


def gpu_pairs(rows: list[Row]) -> list[Pair]:
    """The planner on H200 and B200 for each H200 / B200 row's layout, stack, kernel path and load."""
    seen: set[tuple] = set()
    pairs: list[Pair] = []
    for r in rows:
        c = r.config
        key = (c.model, c.tp, c.dp, c.ep, c.etp, c.stack, r.path, c.batch, r.kv)
        if c.gpu not in ("h200", "b200") or key in seen:
            continue
        seen.add(key)
        h, b = planner_run(c, r.kv, r.path, "h200"), planner_run(c, r.kv, r.path, "b200")
        pairs.append(Pair(c.model, c.layout_label(False), c.stack, r.path, c.batch, h.ms, b.ms))
    return pairs


# --------------------------------------------------------------------------------------------- output


def _fmt(x: float | None, digits: int = 2) -> str:
    return "" if x is None else f"{x:.{digits}f}"


def write_csv(rows: list[Row], path: Path, aic_version: str) -> None:
    header = [
        f"# Planner (core.perf.step_time) vs NVIDIA aiconfigurator {aic_version}, {dt.date.today().isoformat()}",
        "# Produced by: /tmp/aicenv/bin/python -m bench.aic_compare (bench/aic_compare.py; AIC in its own venv)",
        f"# Method: AIC cli_estimate(mode='static'), batch/attention-DP requests per rank, ISL {ISL} / OSL {OSL};"
        " TPOT = mean decode step, TTFT = one-pass prefill.",
        f"# Planner: decode batch/GPUs sequences per GPU at context {ISL + OSL // 2}, prefill batch x {ISL}/GPUs"
        " tokens per GPU, no overlap, same stack, precision and AIC's MoE kernel path.",
        "# aic_balanced_ms: AIC with balanced expert routing (empty: no table). ratio = aic_ms / planner_ms"
        " (> 1: planner predicts faster). [DeepEP]: AIC's wide-EP graph.",
    ]
    cols = "config,model,gpu,stack,layout,gpus,batch,phase,aic_ms,aic_balanced_ms,planner_ms,ratio,group"
    with path.open("w", newline="") as f:
        f.write("\n".join(header) + "\n")
        w = csv.writer(f, lineterminator="\n")
        w.writerow(cols.split(","))
        for r in rows:
            c = r.config
            w.writerow(
                [
                    c.name,
                    c.model,
                    c.gpu,
                    c.stack,
                    r.layout,
                    c.gpus,
                    c.batch,
                    r.phase,
                    _fmt(r.aic_ms, 3),
                    _fmt(r.aic_balanced_ms, 3),
                    _fmt(r.planner_ms, 3),
                    _fmt(r.ratio, 3),
                    c.group,
                ]
            )


def table(head: list[str], body: list[list[str]], markdown: bool) -> list[str]:
    if markdown:
        return [
            "| " + " | ".join(head) + " |",
            "|" + "---|" * len(head),
            *("| " + " | ".join(row) + " |" for row in body),
        ]
    widths = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]
    return ["  ".join(x.ljust(w) for x, w in zip(row, widths, strict=True)) for row in [head, *body]]


def report(rows: list[Row], skipped: list[str], markdown: bool, with_rows: bool) -> str:
    out: list[str] = []
    if with_rows:
        body = [
            [
                r.config.name,
                r.layout,
                r.config.stack,
                str(r.config.gpus),
                str(r.config.batch),
                r.phase,
                f"{r.aic_ms:,.1f}",
                "-" if r.aic_balanced_ms is None else f"{r.aic_balanced_ms:,.1f}",
                f"{r.planner_ms:,.1f}",
                f"{r.ratio:.2f}",
                "-" if r.ratio_balanced is None else f"{r.ratio_balanced:.2f}",
                r.config.group,
            ]
            for r in rows
        ]
        head = ["config", "layout", "stack", "GPUs", "batch", "phase", "AIC ms", "AIC-bal ms", "planner ms"]
        out += [*table([*head, "AIC/planner", "AIC-bal/planner", "group"], body, markdown), ""]
    body = [
        [
            s.label,
            str(s.n),
            f"{s.median_pct:.0f}%",
            f"{s.max_pct:.0f}%",
            f"{s.median_ratio:.2f}",
            "-" if s.median_pct_bal is None else f"{s.median_pct_bal:.0f}%",
            "-" if s.max_pct_bal is None else f"{s.max_pct_bal:.0f}%",
            "-" if s.median_ratio_bal is None else f"{s.median_ratio_bal:.2f}",
        ]
        for s in summary(rows)
    ]
    head = ["group", "n", "median diff", "max", "median AIC/planner"]
    out += [*table([*head, "vs AIC-bal: median", "max", "median AIC-bal/planner"], body, markdown), ""]
    bullet = "- " if markdown else "  "
    out += ["Targets (issue #18):", *(bullet + x for x in target_lines(summary(rows))), ""]
    out += ["Largest disagreement per phase and group (AIC as shipped):", *(bullet + x for x in disagreements(rows))]
    flagged = sorted({f"{r.config.name} ({r.notes})" for r in rows if "AIC " in r.notes})
    out += ["", "AIC caveats:", *(bullet + x for x in flagged), ""]
    pairs = gpu_pairs(rows)
    slower = [
        f"{p.model} {p.layout} {p.stack} b{p.batch} {ph}" for p in pairs for ph in PHASES if p.b200[ph] > p.h200[ph]
    ]
    body = [
        [p.model, p.layout, f"{p.stack}/{p.path}", str(p.batch)]
        + [x for ph in PHASES for x in (f"{p.h200[ph]:,.1f}", f"{p.b200[ph]:,.1f}", f"{p.b200[ph] / p.h200[ph]:.2f}")]
        for p in pairs
    ]
    head = [
        "model",
        "layout",
        "stack/path",
        "batch",
        "TPOT H200",
        "B200",
        "B200/H200",
        "TTFT H200",
        "B200",
        "B200/H200",
    ]
    out += ["Planner, B200 vs H200 (ms; same layout, stack, kernel path and load):", *table(head, body, markdown)]
    verdict = "never slower" if not slower else "slower in: " + "; ".join(slower)
    out += ["", f"B200 {verdict} than H200 in the planner ({len(pairs)} pairs, decode and prefill)."]
    if skipped:
        out += ["", "Skipped (AIC could not estimate):", *(bullet + s for s in skipped)]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--csv", type=Path, default=CSV_OUT, help="where to write the rows (default: %(default)s)")
    p.add_argument("--no-write", action="store_true", help="print only")
    p.add_argument("--markdown", action="store_true", help="print the tables as markdown, with every row")
    p.add_argument("--only", default="", help="run only configurations whose name contains this")
    args = p.parse_args(argv)
    try:
        import aiconfigurator  # noqa: F401
    except ImportError:
        print("aiconfigurator not installed: skipped")
        return 0
    version = importlib.metadata.version("aiconfigurator")
    grid = [c for c in _grid() if args.only in c.name]
    print(f"aiconfigurator {version}: {len(grid)} configurations x (as shipped, balanced routing)", file=sys.stderr)
    with aic_session() as aic:
        rows, skipped = run_grid(aic, grid)
    if not rows:
        print("no configuration could be estimated")
        return 1
    if not args.no_write:
        write_csv(rows, args.csv, version)
        print(f"wrote {args.csv.relative_to(ROOT) if args.csv.is_relative_to(ROOT) else args.csv}", file=sys.stderr)
    print(report(rows, skipped, args.markdown, with_rows=args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
