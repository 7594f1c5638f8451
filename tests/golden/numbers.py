"""Golden numbers: every catalog model x a handful of scenarios -> the figures the pages show.

A regression pin for refactors (the idea of aiconfigurator's ``parity_tests/goldens``): parameters per
component, weight bytes per format, KV cache / state / decode read bytes per sequence at several
contexts, the per-GPU cache under TP x PP, per-GPU memory under the default, attention-DP and pipeline
layouts, step-time components for decode and prefill, the decode-step roofline, the speculative
speedup against batch, every validation case's prediction and the single-box placement.

The numbers are NOT independent truths: they pin what the code computes, so that a refactor that
should change nothing changes nothing, and a fix that changes a number says so. Hand-checked values
live in the unit tests.

    python -m tests.golden.numbers --diff    # what moved against the fixture (key: before -> after)
    python -m tests.golden.numbers --write   # rewrite the fixture (only in a commit that says why)
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from core.deployment.bundle import Deployment

FIXTURE = Path(__file__).with_name("golden_numbers.json")

# (gpu id, nodes, GPUs per node, weight dtype, KV dtype)
SCENARIOS = {
    "h200x8-fp8": ("h200", 1, 8, "fp8", "bf16"),
    "h100x16-fp8-pp": ("h100-sxm", 2, 8, "fp8", "bf16"),
    "gb200x72-fp8": ("gb200", 18, 4, "fp8", "fp8"),
    "mi300x8-bf16": ("mi300x", 1, 8, "bf16", "bf16"),
}
CONTEXTS = (1, 4096, 32_768, 131_072)
DECODE_TOKENS = (1.0, 64.0, 512.0)
VALUE = float | int | str


def _num(x) -> VALUE:
    if isinstance(x, str):
        return x
    if isinstance(x, (bool, np.bool_)):
        return int(x)
    return float(x)


def _guard(out: dict[str, VALUE], key: str, fn: Callable[[], Any], record: Callable[[Any], dict[str, Any]]) -> None:
    """Record ``fn()`` under ``key`` (through ``record``), or the ValueError it raises."""
    try:
        value = fn()
    except ValueError as e:
        out[key] = "error: " + str(e)
        return
    for k, v in record(value).items():
        out[f"{key}/{k}" if k else key] = _num(v)


def _model_numbers(m, out: dict[str, VALUE]) -> None:
    from core import memory
    from core.deployment.parallel import pipeline_stages
    from core.model import params
    from core.report import catalog_rows as summary

    p = f"{m.id}"
    for k, v in params.breakdown(m).as_dict().items():
        out[f"{p}/params/{k}"] = v
    for k, v in params.active_breakdown(m).as_dict().items():
        out[f"{p}/active/{k}"] = v
    out[f"{p}/flops_per_token"] = params.flops_per_token(m)
    for tp in (1, 2, 8):
        _guard(
            out,
            f"{p}/attention_params_per_rank/tp{tp}",
            lambda tp=tp: params.attention_params_per_rank(m, tp),
            lambda v: {"": v},
        )
    for dt in ("bf16", "fp8", "int4", "nvfp4"):
        out[f"{p}/weights_bytes/{dt}"] = memory.weights_bytes(m, dt)
    out[f"{p}/weights_bytes/fp8+mtp"] = memory.weights_bytes(m, "fp8", include_mtp=True)
    for k, v in memory.weight_bytes_by_component(m, "fp8").items():
        out[f"{p}/weight_bytes_fp8/{k}"] = v
    for kv in ("bf16", "fp8"):
        out[f"{p}/kv_bytes_per_token/{kv}"] = memory.kv_bytes_per_token(m, kv)
    ctxs = (*CONTEXTS, m.max_position_embeddings)
    for c in ctxs:
        out[f"{p}/kv_bytes_per_sequence/bf16/{c}"] = memory.kv_bytes_per_sequence(m, c, "bf16")
        out[f"{p}/decode_read_bytes_per_sequence/bf16/{c}"] = memory.decode_read_bytes_per_sequence(m, c, "bf16")
    out[f"{p}/kv_bytes_per_sequence/fp8/32768"] = memory.kv_bytes_per_sequence(m, 32_768, "fp8")
    out[f"{p}/decode_read_bytes_per_sequence/fp8/32768"] = memory.decode_read_bytes_per_sequence(m, 32_768, "fp8")
    out[f"{p}/fixed_state_bytes_per_sequence"] = memory.fixed_state_bytes_per_sequence(m)
    out[f"{p}/linear_state_bytes_per_sequence"] = memory.linear_state_bytes_per_sequence(m)
    out[f"{p}/state_equivalent_tokens"] = memory.state_equivalent_tokens(m)
    for c in (4096, 131_072):
        parts = memory.cache_by_layer_type(m, c, "bf16")
        out[f"{p}/cache_by_layer_type/{c}/total"] = sum(parts.values())
        out[f"{p}/cache_by_layer_type/{c}/parts"] = len(parts)
    for pp in (1, 2, 4):
        stages = pipeline_stages(m.num_layers, pp) if pp <= m.num_layers else []
        for s, stage in enumerate(stages):
            for tp in (1, 2, 8):
                for c in (4096, 131_072):
                    out[f"{p}/kv_on_gpu/pp{pp}s{s}/tp{tp}/{c}"] = memory.kv_bytes_per_sequence_on_gpu(
                        m, c, "bf16", tp, stage
                    )
    row = summary.model_row(m)
    for k in (
        "total_b",
        "active_b",
        "active_ratio_pct",
        "mtp_b",
        "flops_per_token_g",
        "kv_bytes_per_token_bf16",
        "linear_state_mib_per_seq",
    ):
        out[f"{p}/summary/{k}"] = row[k]


def _layouts(m, total: int, gpn: int, prec):
    from core.deployment.parallel import default_layout
    from core.deployment.specs import ParallelLayout

    lays = {"default": default_layout(m, total, gpn, prec)}
    if total >= 8:
        per_stage = 8
        pp = total // per_stage
        if m.moe is not None and m.moe.n_routed_experts % per_stage == 0:
            lays["dp-attn8-ep8"] = ParallelLayout(attention_tp=1, attention_dp=8, ep=8, expert_tp=1, pp=pp)
            lays["tp2-dp4-ep8"] = ParallelLayout(attention_tp=2, attention_dp=4, ep=8, expert_tp=1, pp=pp)
        else:
            lays["tp8"] = ParallelLayout(attention_tp=8, attention_dp=1, ep=1, expert_tp=8, pp=pp)
    return lays


def _scenario_numbers(m, cat, sid: str, out: dict[str, VALUE]) -> None:
    from core import memory, moe, perf, speculative
    from core.deployment.parallel import check_layout
    from core.deployment.specs import MemoryAssumptions, Precision, Workload

    gpu_id, nodes, gpn, w, kv = SCENARIOS[sid]
    gpu = cat.gpu(gpu_id)
    total = nodes * gpn
    prec = Precision(weights=w, kv_cache=kv, dispatch="fp8" if w != "bf16" else "bf16")
    wl = Workload()
    eff = cat.efficiency_for(gpu.id)
    p = f"{m.id}/{sid}"
    for name, lay in _layouts(m, total, gpn, prec).items():
        q = f"{p}/{name}"
        out[f"{q}/layout"] = (
            f"tp{lay.attention_tp} adp{lay.attention_dp} ep{lay.ep} etp{lay.expert_tp} pp{lay.pp} dp{lay.dp}"
        )
        problems = check_layout(m, lay, precision=prec)
        if problems:
            out[f"{q}/invalid"] = "; ".join(problems)
            continue

        def mem(lay=lay):
            return memory.stage_memories(Deployment(m, gpu, lay, prec), wl)

        def rec_mem(stages):
            d: dict[str, Any] = {}
            busiest = min(stages, key=lambda r: r.headroom_bytes)
            d["busiest_stage"] = busiest.stage
            for r in {stages[0].stage: stages[0], stages[-1].stage: stages[-1], busiest.stage: busiest}.values():
                for k, v in r.components.items():
                    d[f"s{r.stage}/{k}"] = v
                d[f"s{r.stage}/kv_budget"] = r.kv_budget_bytes
                d[f"s{r.stage}/kv_per_seq"] = r.kv_bytes_per_sequence
            return d

        _guard(out, f"{q}/memory", mem, rec_mem)
        _guard(
            out,
            f"{q}/max_seqs",
            lambda lay=lay: memory.max_concurrent_sequences(Deployment(m, gpu, lay, prec), [2560, 32_768]),
            lambda v: {"2560": v[0], "32768": v[1]},
        )
        for phase, tokens, ctx in (("decode", 8.0, 2304), ("prefill", 4096.0, 2048)):
            for overlap in ("none", "two_batch"):
                cfg = perf.StepConfig(phase, tokens, ctx, overlap=overlap)
                _guard(
                    out,
                    f"{q}/step/{phase}/{overlap}",
                    lambda cfg=cfg, lay=lay: perf.step_time(Deployment(m, gpu, lay, prec, eff), cfg),
                    lambda s, overlap=overlap: {**(s.components if overlap == "none" else {}), "step_s": s.step_s},
                )
        _guard(
            out,
            f"{q}/roofline",
            lambda lay=lay: moe.decode_step(
                Deployment(m, gpu, lay, prec, assumptions=MemoryAssumptions()), np.array(DECODE_TOKENS), 2304
            ),
            lambda d: {
                f"{f}/{t:g}": getattr(d, f)[i]
                for f in ("weight_bytes", "kv_bytes", "flops", "time_s")
                for i, t in enumerate(DECODE_TOKENS)
            },
        )
        if name == "default":
            _guard(
                out,
                f"{q}/spec_batch",
                lambda lay=lay: speculative.batch_speedup(
                    Deployment(m, gpu, lay, prec, eff),
                    [1, 16, 128],
                    alpha=0.8,
                    gamma=3,
                    context_len=2304,
                    draft_cost=0.05,
                ),
                lambda b: {f"{x:g}": b.speedup[i] for i, x in enumerate(b.batches)},
            )


def _validation_numbers(cat, out: dict[str, VALUE]) -> None:
    from core import validation

    for case in cat.validation_cases:
        _guard(out, f"validation/{case['id']}", lambda case=case: validation.predict(case), lambda v: {"": v})


def _offload_numbers(cat, out: dict[str, VALUE]) -> None:
    from core.single_box import offload
    from core.single_box.box import Box

    host, gpu = cat.host("server-ddr5-8ch-512"), cat.gpu("rtx-4090")
    for mid in ("deepseek-v3", "qwen3-235b-a22b", "gpt-oss-120b", "qwen3.5-397b-a17b", "nemotron-3-super-120b-a12b"):
        m = cat.model(mid)
        _guard(
            out,
            f"offload/{mid}",
            lambda m=m: offload.placement(Box(m, host, gpu, 1, "q4_k_m", 8192)),
            lambda pl: {
                "n_cpu_moe": pl.n_cpu_moe,
                "gpu_weights": pl.gpu_weights_bytes,
                "host_weights": pl.host_weights_bytes,
                "gpu_kv": pl.gpu_kv_bytes,
                "decode_gpu_s": pl.decode_gpu_s,
                "decode_host_s": pl.decode_host_s,
                "prefill": pl.prefill_tokens_per_s,
            },
        )


def collect() -> dict[str, VALUE]:
    """Every golden number, keyed ``model/scenario/layout/quantity``."""
    from core.catalog import load_catalog

    cat = load_catalog()
    out: dict[str, VALUE] = {}
    for mid in sorted(cat.models):
        m = cat.models[mid]
        _model_numbers(m, out)
        for sid in SCENARIOS:
            _scenario_numbers(m, cat, sid, out)
    _validation_numbers(cat, out)
    _offload_numbers(cat, out)
    return {k: _num(v) for k, v in out.items()}


def differences(old: dict[str, VALUE], new: dict[str, VALUE], rel: float = 1e-9) -> list[str]:
    """Lines ``key: old -> new`` for every key added, removed or moved beyond ``rel``."""
    lines = []
    for k in sorted(set(old) | set(new)):
        a, b = old.get(k, "(absent)"), new.get(k, "(absent)")
        if isinstance(a, float) and isinstance(b, float):
            if math.isclose(a, b, rel_tol=rel, abs_tol=1e-9):
                continue
            pct = f" ({100 * (b / a - 1):+.2f}%)" if a else ""
            lines.append(f"{k}: {a:.8g} -> {b:.8g}{pct}")
        elif a != b:
            lines.append(f"{k}: {a!r} -> {b!r}")
    return lines


def load() -> dict[str, VALUE]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def main(argv: list[str]) -> int:
    new = collect()
    if "--write" in argv:
        FIXTURE.write_text(json.dumps(new, indent=0, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {len(new):,} numbers to {FIXTURE}")
        return 0
    diff = differences(load(), new)
    print("\n".join(diff) if diff else "no golden number moved")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
