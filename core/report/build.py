"""The scenario's key figures, page by page, as data: what the Report page, the exports and the CLI
print. Every figure carries its unit; charts are described by their data, rendered elsewhere
(``ui.report``), so this module stays free of plotting libraries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from core import memory, moe
from core import speculative as sd
from core.catalog import Catalog
from core.deployment.bundle import Deployment
from core.deployment.parallel import sequences_per_replica
from core.deployment.specs import Precision, Scenario
from core.hardware.efficiency import STACK_NAMES
from core.model import ModelSpec, params, routing
from core.report.commands import benchmark_section, kubernetes_section, launch_code
from core.report.layouts import min_gpu_rows, no_plan_text
from core.report.section import Section
from core.scenario import resolved_layout, scenario_to_params
from core.scenario.deploy import resolve
from core.serving import layout
from core.speculative.measured import recommend_gamma

__all__ = ["Report", "Section", "build_report", "compare_row"]


@dataclass
class Report:
    title: str
    scenario: Scenario
    url_query: dict[str, str]
    sections: list[Section]
    charts: dict[str, dict[str, Any]]  # name -> data for ui.report's chart builders
    sources: list[str]

    def as_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "scenario": self.scenario.model_dump(mode="json"),
            "url_query": self.url_query,
            "sections": [
                {
                    "title": s.title,
                    "figures": dict(s.figures),
                    "table": s.table,
                    "notes": s.notes,
                    "code": [{"label": label, "text": text} for label, text in s.code],
                }
                for s in self.sections
            ],
            "sources": self.sources,
        }


# the Fit section's verdict for each memory.GPUMemory.status of the most loaded GPU
_FIT_VERDICTS = {
    "fits": "fits",
    "kv_short": "weights fit, the workload's KV cache does not",
    "weights_short": "does not fit",
}


def _gb(b: float) -> str:
    return f"{b / 1e9:,.1f} GB"


def build_report(
    scenario: Scenario, cat: Catalog, model: ModelSpec | None = None, *, with_layouts: bool = True
) -> Report:
    """Everything the pages answer for ``scenario`` (``model``: an imported model, else the catalog's)."""
    model = model or cat.model(scenario.model_id)
    gpu = cat.gpu(scenario.gpu_id)
    prec, wl, spec, a = scenario.precision, scenario.workload, scenario.spec, scenario.memory
    lay = resolved_layout(scenario, model)
    draft = cat.draft_model_for(spec)
    sections: list[Section] = []
    charts: dict[str, dict[str, Any]] = {}

    # ---- scenario
    sec = Section("Scenario")
    sec.figures += [
        (
            "Model",
            f"{model.name} ({params.total_params(model) / 1e9:,.1f}B total, {params.active_params(model) / 1e9:,.1f}B active)",
        ),
        (
            "GPUs",
            f"{scenario.num_nodes} × {scenario.gpus_per_node} {gpu.name} ({scenario.total_gpus:,} GPUs, "
            f"{gpu.memory_gb:,.1f} GB each)",
        ),
        ("Precision", prec.label + f", dispatch {prec.dispatch}"),
        ("Serving stack", f"{STACK_NAMES[scenario.serving_stack]} (its kernels time the steps)"),
        (
            "Workload",
            f"{wl.batch:,} sequences × ({wl.input_len:,} in + {wl.output_len:,} out) tokens"
            + (
                f"; {100 * wl.prefix_reuse:g}% of each prompt from a warm prefix cache ({wl.computed_prompt_tokens:,} "
                "prompt tokens computed)"
                if wl.prefix_reuse
                else ""
            ),
        ),
        (
            "Layout",
            f"TP {lay.attention_tp} × DP-attn {lay.attention_dp} | EP {lay.ep} × expert-TP {lay.expert_tp} | "
            f"PP {lay.pp} | DP {lay.dp}" + ("" if scenario.layout else " (default)"),
        ),
        ("Speculative decoding", "off" if not spec.enabled else f"{spec.method}, γ {spec.num_speculative_tokens}"),
    ]
    sections.append(sec)

    # ---- fit
    sec = Section("Fit")
    try:
        d = Deployment(model, gpu, lay, prec, workload=wl, assumptions=a, spec=spec, draft=draft)
        worst = min(stages := memory.stage_memories(d), key=lambda r: r.headroom_bytes)
        ctx = wl.context_len
        max_seqs = memory.max_concurrent_sequences(d, ctx)
        sec.figures += [
            ("Verdict", _FIT_VERDICTS[worst.status]),
            ("Weights per GPU", f"{_gb(worst.weights_bytes)} of {_gb(worst.capacity_bytes)}"),
            (
                "KV cache for the workload",
                f"{_gb(worst.kv_required_bytes)} (budget {_gb(max(worst.kv_budget_bytes, 0))})",
            ),
            ("Usable per GPU", f"{_gb(worst.usable_bytes)} at gpu_memory_utilization {a.gpu_memory_utilization:g}"),
            (f"Max sequences at {ctx:,} tokens", f"{max_seqs:,}"),
            ("Whole-model weights", _gb(memory.weights_bytes(model, prec, include_mtp=spec.kind == "mtp"))),
        ]
        charts["memory"] = {
            "stages": [{k: v / 1e9 for k, v in r.components.items() if v > 0} for r in stages],
            "usable_gb": worst.usable_bytes / 1e9,
            "capacity_gb": worst.capacity_bytes / 1e9,
        }
    except ValueError as e:
        sec.notes.append(f"Not modelled for this layout: {e}")
    sec.table += min_gpu_rows(model, list(cat.gpus.values()), gpu.id, a)  # with the scenario's own GPU (M14)
    sections.append(sec)

    # ---- intensity
    sec = Section("Intensity")
    eb = moe.element_bytes(gpu, prec.expert_dtype)
    ridge = gpu.ridge_point_flop_per_byte(eb.compute_dtype)
    batches = np.unique(np.round(np.geomspace(1, 65536, 50)))
    sw = moe.intensity_sweep(model, [gpu], batches, prec)
    replicas, per_replica = max(lay.dp, 1), sequences_per_replica(wl.batch, lay)  # as the Intensity page takes it
    now = float(moe.intensity_sweep(model, [gpu], [per_replica], prec)["intensity"][0, 0])
    sec.figures += [
        (
            "Tokens per decode step",
            f"{per_replica:,} per replica" + (f" ({wl.batch:,} over {replicas} replicas)" if replicas > 1 else ""),
        ),
        ("GEMM intensity at the batch", f"{now:,.1f} FLOP/byte against a ridge of {ridge:,.0f} ({eb.compute_dtype})"),
        ("Regime", "memory-bound" if now < ridge else "compute-bound"),
    ]
    if model.moe is not None:
        e = model.moe
        sec.figures += [
            ("Tokens per expert", f"{routing.tokens_per_expert(per_replica, e.top_k, e.n_routed_experts):,.1f} tokens"),
            (
                "Experts touched per layer",
                f"{routing.expected_experts_touched(per_replica, e.top_k, e.n_routed_experts):,.1f} of {e.n_routed_experts}",
            ),
        ]
        need = moe.batch_for_expert_intensity(model, ridge, eb)
        sec.figures.append(
            ("Batch to reach the ridge", "never" if not np.isfinite(need) else f"{need:,.0f} tokens per step")
        )
    charts["intensity"] = {
        "batch": batches.tolist(),
        "intensity": sw["intensity"][0].tolist(),
        "ridge": ridge,
        "now": [per_replica, now],
    }
    sections.append(sec)

    # ---- speculative
    sec = Section("Speculative decoding")
    used = spec if spec.enabled else sd.suggested_spec(model, cat.draft_methods)
    alpha, c = sd.resolved_alpha_cost(used, cat.draft_methods)
    g, drafting = used.num_speculative_tokens, cat.draft_model_for(used)  # the scenario's draft or the suggested one's
    ds = resolve(scenario, cat, model).with_(spec=used, draft=drafting)  # as the Speculative page takes it
    advice = recommend_gamma(ds, used.method, alpha, c, wl.decode_context_len)
    # the one speedup at batch 1, as the Speculative page and its chart show it
    batch1 = sd.batch_speedup(ds, [1], alpha=alpha, gamma=g, context_len=wl.decode_context_len, draft_cost=c).speedup[0]
    sec.figures += [
        (
            "Assumed",
            f"α {alpha:.2f}, γ {g}, c {c:g}"
            + (
                ""
                if spec.enabled
                else f" (speculation off: {cat.draft_methods[used.method].name}, its catalog defaults)"
            ),
        ),
        ("Tokens per step", f"{sd.expected_tokens(alpha, g):.2f}"),
        (
            "Speedup at batch 1",
            f"{batch1:.2f}× (step-time model, fixed step costs included; the closed form E / (γc + 1) gives "
            f"{sd.speedup(alpha, g, c):.2f}×)",
        ),
        ("Ceiling", f"{sd.ceiling(alpha):.2f} tokens per step" if alpha < 1 else "unbounded"),
        ("Break-even α", f"{sd.break_even_alpha(g, c):.3f}"),
        ("Best γ", f"{advice.gamma} ({advice.speedup:.2f}×; {advice.note})"),
    ]
    charts["speculative"] = {
        "alpha": sd.ALPHA_GRID.tolist(),
        "curves": {str(k): v.tolist() for k, v in sd.speedup_curves(c).items()},
        "now": [alpha, sd.speedup(alpha, g, c)],
        "c": c,
    }
    sections.append(sec)

    # ---- layouts
    if with_layouts:
        sec = Section("Layouts")
        search = layout.search_deployment(scenario, cat, model, wl.model_copy(update={"batch": 1}))
        rule = layout.decision_rule(search)
        sec.figures.append(("Sources' decision table", f"{rule[0]} → {rule[1]}"))
        bests, manifests = [], []
        for phase in ("prefill", "decode"):
            plans, rejected = layout.recommend_with_rejections(search, phase, catalog=cat)
            plans = plans[:3]
            if plans:
                best = plans[0]
                bests.append(best)
                overlap = "two-batch overlap" if best.overlap == "two_batch" else "no overlap"
                per = best.tokens_per_gpu
                if phase == "decode":  # what the figure counts, and per what (numbers audit 3 B8.6, review 3 M14)
                    what = "output tokens, as a decode pool"
                    at = f"{per:,.{1 if per < 10 else 0}f} sequences per GPU, TPOT"
                else:
                    what = f"{'computed' if wl.prefix_reuse else 'input'} prompt tokens, as a prefill pool"
                    at = f"{per:,.0f} prompt tokens per GPU per step, TTFT"
                sec.figures.append(
                    (
                        f"Best {phase} layout",
                        f"{best.label} ({overlap}): {best.tokens_per_s_per_gpu:,.0f} tokens/s per GPU ({what}) at "
                        f"{at} {best.latency_s * 1e3:,.0f} ms",
                    )
                )
                # a phase's plan runs as that phase's pool: the decode plan has no prompt in its steps, so its
                # command is the decode worker of a disaggregated pair, not aggregated serving (review 3 M1)
                manifests += launch_code(sec, best, search, phase)
                for p in plans:
                    sec.table.append(
                        {
                            "phase": phase,
                            "rank": p.rank,
                            "layout": p.label,
                            "tokens/s per GPU": round(p.tokens_per_s_per_gpu),
                            "step (ms)": round(p.step_s * 1e3, 1),
                        }
                    )
            else:
                sec.figures.append((f"Best {phase} layout", no_plan_text(search, rejected)))  # which cause (M14)
        sections.append(sec)
        sections += [s for s in [benchmark_section(bests, model, prec, scenario), kubernetes_section(manifests)] if s]

    # ---- single box (when the scenario has one)
    if scenario.box is not None and model.is_moe:
        from core.single_box import offload
        from core.single_box.box import Box

        b = scenario.box
        sec = Section("Single box")
        try:
            host = cat.host(b.host_id)
            box_gpu = cat.gpu(b.gpu_id) if b.gpu_id else None
            box = Box(
                model,
                host,
                box_gpu,
                b.n_gpus if box_gpu else 1,
                Precision(weights=b.quant, kv_cache=prec.kv_cache),
                min(b.context_len, model.max_position_embeddings),
            )
            ncm = b.n_cpu_moe
            if ncm is not None and ncm > model.num_layers:  # the URL allows 0-10,000 whatever the model
                sec.notes.append(
                    f"--n-cpu-moe {ncm:,} is more than the model's {model.num_layers:,} layers: "
                    f"{model.num_layers:,} used (allowed: 0-{model.num_layers:,})"
                )
                ncm = model.num_layers
            pl = offload.placement(box, ncm)
            sec.figures += [
                ("Box", host.name + (f" + {b.n_gpus} × {box_gpu.name}" if box_gpu else "")),
                ("Quantisation", f"{b.quant}, {offload.text_weights_bytes(model, b.quant) / 1e9:,.0f} GB of weights"),
                ("Verdict", pl.status),
                ("GPU memory", f"{pl.gpu_total_bytes / 1e9:,.1f} GB of {pl.gpu_capacity_bytes / 1e9:,.1f} GB"),
                ("Decode (batch 1)", f"{pl.decode_tokens_per_s:,.1f} tokens/s"),
                ("Prompt processing", f"{pl.prefill_tokens_per_s:,.0f} tokens/s ({pl.prefill_path})"),
            ]
            if pl.kind == "discrete":
                sec.figures.insert(
                    4,
                    (
                        "Host RAM",
                        f"{pl.host_total_bytes / 1e9:,.1f} GB of {pl.host_capacity_bytes / 1e9:,.0f} GB"
                        f" (--n-cpu-moe {pl.n_cpu_moe}: {pl.offloaded_layers} MoE layers' experts)",
                    ),
                )
            sec.notes += list(pl.notes)
        except (KeyError, ValueError) as e:
            sec.notes.append(f"not computed: {e}")
        sections.append(sec)

    sources = [
        f"Model: {model.source or 'imported config.json'}; published counts: {model.published.source or 'n/a'}",
        "GPU: " + "; ".join(f"{k}: {v}" for k, v in gpu.sources.items()),
        f"Memory assumptions: gpu_memory_utilization {a.gpu_memory_utilization:g}, runtime reserve {a.runtime_reserve_gb:g} GB, "
        f"activations {a.max_num_batched_tokens:,} tokens × hidden × 2 B × {a.activation_factor:g}",
        "Step-time model efficiency factors: catalogs/efficiency.yaml (see the Validation page for their accuracy)",
        "Formulas and errata: README.md and docs/errata.md of the MoE Deployment Planner",
    ]
    return Report(
        f"{model.name} on {scenario.total_gpus} × {gpu.name}",
        scenario,
        scenario_to_params(scenario),
        sections,
        charts,
        sources,
    )


def compare_row(name: str, scenario: Scenario, cat: Catalog, model: ModelSpec | None = None) -> dict[str, Any]:
    """One column of the Compare page: fit, best decode layout, tokens/s per GPU, $ per million output
    tokens at the GPU's default price, speculative speedup. Units in the keys."""
    from core.serving import cost

    model = model or cat.model(scenario.model_id)
    gpu = cat.gpu(scenario.gpu_id)
    prec, wl, spec, a = scenario.precision, scenario.workload, scenario.spec, scenario.memory
    lay = resolved_layout(scenario, model)
    draft = cat.draft_model_for(spec)
    row: dict[str, Any] = {
        "scenario": name,
        "model": model.name,
        "GPUs": f"{scenario.total_gpus} × {gpu.name}",
        "precision": prec.label,
    }
    try:
        r = memory.per_gpu_memory(Deployment(model, gpu, lay, prec, workload=wl, assumptions=a, spec=spec, draft=draft))
        row["fit"] = "fits" if r.fits else ("KV does not fit" if r.kv_budget_bytes > 0 else "does not fit")
        row["weights per GPU (GB)"] = round(r.weights_bytes / 1e9, 1)
        row["KV headroom per GPU (GB)"] = round(r.headroom_bytes / 1e9, 1)
    except ValueError as e:
        row["fit"] = f"layout invalid: {e}"
    search = layout.search_deployment(scenario, cat, model, wl.model_copy(update={"batch": 1}))
    plans = layout.recommend(search, "decode", catalog=cat, max_plans=1)
    if plans:
        p = plans[0]
        row["best decode layout"] = p.label
        row["output tokens/s per GPU"] = round(p.tokens_per_s_per_gpu)
        if gpu.price_per_gpu_hour_usd:
            row["$ per M output tokens (decode GPUs fully busy)"] = round(
                cost.dollars_per_million_tokens(1, gpu.price_per_gpu_hour_usd, p.tokens_per_s_per_gpu), 3
            )
    else:
        row["best decode layout"] = "none fits"
    if spec.enabled:
        alpha, c = sd.resolved_alpha_cost(spec, cat.draft_methods)
        row["speculative speedup (×)"] = round(sd.speedup(alpha, spec.num_speculative_tokens, c), 2)
    else:
        row["speculative speedup (×)"] = "off"
    return row
