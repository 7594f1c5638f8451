"""Derived figures per catalog entry, as plain rows (dicts with unit-suffixed keys).

The Catalog page and the report show these; the pages only rename columns for display.
"""

from __future__ import annotations

from typing import Any

from core import memory
from core.catalog import Catalog
from core.hardware import GPUSpec
from core.memory import host_tables
from core.model import ModelSpec, params

__all__ = ["gpu_row", "gpu_rows", "model_caveats", "model_row", "model_rows"]


def model_row(m: ModelSpec) -> dict[str, Any]:
    """Architecture and derived figures of one model.

    ``total_b`` / ``active_b``: billions of parameters (core.model.params; MTP apart, vision included);
    ``active_ratio_pct``: active / total; ``flops_per_token_g``: 2 x active matmul parameters, GFLOP;
    ``kv_bytes_per_token_bf16``: KV-cache bytes per token over all layers in bf16 (core.memory).
    ``published_*`` and ``*_error_pct`` compare with the vendor's headline under its own convention.
    """
    total = params.total_params(m, include_mtp=m.published.includes_mtp, include_vision=m.published.includes_vision)
    active = params.active_params(m)
    pub = m.published
    e = m.moe
    return {
        "id": m.id,
        "name": m.name,
        "family": m.family,
        "kind": "MoE" if m.is_moe else "dense",
        "release_date": m.release_date,
        "attention": m.mixer_summary,
        "layers": m.num_layers,
        "hidden_size": m.hidden_size,
        "routed_experts": e.n_routed_experts if e else 0,
        "top_k": e.top_k if e else 0,
        "shared_experts": e.n_shared_experts if e else 0,
        "total_b": params.total_params(m) / 1e9,
        "active_b": active / 1e9,
        "active_ratio_pct": 100.0 * active / params.total_params(m, include_vision=False),
        "mtp_b": params.mtp_params(m) / 1e9,
        "vision_b": m.vision_params / 1e9,
        "flops_per_token_g": params.flops_per_token(m) / 1e9,
        "kv_elems_per_token_per_layer": memory.kv_elements_per_token_per_layer(m),
        "kv_bytes_per_token_bf16": memory.kv_bytes_per_token(m, "bf16"),
        "linear_state_mib_per_seq": memory.linear_state_bytes_per_sequence(m) / 2**20,
        "published_total_b": pub.total_params / 1e9 if pub.total_params else None,
        "total_error_pct": 100.0 * (total / pub.total_params - 1) if pub.total_params else None,
        "published_active_b": pub.active_params / 1e9 if pub.active_params else None,
        "active_error_pct": 100.0 * (active / pub.active_params - 1) if pub.active_params else None,
        "active_convention": pub.active_convention
        + (
            f" (published figure is a name rounded to {pub.active_rounded_to / 1e9:g}B)"
            if pub.active_rounded_to
            else ""
        ),
        "tokenizer_family": m.tokenizer_family,
        "max_context_tokens": m.max_position_embeddings,
        "source": m.source,
        "counts_source": pub.source,
    }


def model_rows(cat: Catalog) -> list[dict[str, Any]]:
    return [model_row(m) for m in cat.models.values()]


def accelerator_caveat(g: GPUSpec) -> str | None:
    """What the planner can and cannot say for an accelerator that is not a GPU (TPU, Trainium); None for a GPU."""
    if g.accelerator == "gpu":
        return None
    return (
        f"{g.name} is not a GPU: its own serving stack ({g.serving_stack or 'not named'}) serves it, not SGLang, vLLM "
        "or TensorRT-LLM. Memory fit, arithmetic intensity and layouts come from its HBM, peaks and links and apply; "
        "every step time (Speculative, Layouts' throughput, Disaggregation, Report) is an uncalibrated roofline "
        "estimate with a GPU's fractions of peak (the Validation page names whose), and the launch commands do not apply."
    )


def gpu_row(g: GPUSpec) -> dict[str, Any]:
    """Datasheet figures of one GPU plus its ridge points (dense FLOP/s over HBM bytes/s); memory as marketed and
    as the runtime reports it (the budgets' base)."""
    row: dict[str, Any] = {
        "id": g.id,
        "name": g.name,
        "vendor": g.vendor,
        "accelerator": g.accelerator.upper() if g.accelerator != "gpu" else "GPU",
        "architecture": g.architecture,
        "memory_type": g.memory_type,
        "hbm_gb": g.hbm_capacity_gb,
        "runtime_gb": g.memory_gb,
        "hbm_tbps": g.hbm_bandwidth_gbps / 1000.0,
    }
    link = host_tables.host_link(g)
    for dt in ("bf16", "fp8", "fp4"):
        row[f"{dt}_tflops"] = g.dense_tflops.get(dt)
        row[f"ridge_{dt}_flop_per_byte"] = g.ridge_point_flop_per_byte(dt) if g.supports(dt) else None
    row.update(
        scale_up_link=g.scale_up_link,
        scale_up_gbps=g.scale_up_bw_gbps,
        scale_up_domain_gpus=g.scale_up_domain_gpus,
        scale_out_link=g.scale_out_link,
        scale_out_gbps=g.scale_out_bw_gbps,
        host_link=link[0],
        host_link_gbps=link[1],
        power_w=g.power_w,
        price_usd_per_hour=g.price_per_gpu_hour_usd,
        confidence=g.confidence,
        source="; ".join(f"{k}: {v}" for k, v in g.sources.items()),
    )
    return row


def gpu_rows(cat: Catalog) -> list[dict[str, Any]]:
    return [gpu_row(g) for g in cat.gpus.values()]


def workload_rows() -> list[dict[str, Any]]:
    """The Catalog page's rows of the workload profiles (core.serving.workload_profiles), tokens per request."""
    from core.serving.workload_profiles import load_profiles

    return [
        {
            "name": p.name,
            "description": p.description,
            "input_median": p.input_tokens.median,
            "input_p90": p.input_tokens.p90,
            "input_mean": p.input_tokens.mean,
            "output_median": p.output_tokens.median,
            "output_p90": p.output_tokens.p90,
            "output_mean": p.output_tokens.mean,
            "prefix_reuse_pct": 100.0 * p.prefix_reuse,
            "computed_input": p.computed_input_tokens,
            "turns": p.turns,
            "confidence": p.confidence,
            "source": p.source,
            "notes": p.notes,
        }
        for p in load_profiles()
    ]


def model_caveats(m: ModelSpec) -> list[str]:
    """What the planner does not model for this architecture, in a sentence each (shown with the model,
    so that no page silently uses a number it cannot get right)."""
    out: list[str] = []
    if m.moe is not None and m.moe.latent_size:
        out.append(
            f"Latent MoE: experts run at {m.moe.latent_size:,} wide, but the all-to-all model still sends "
            f"the full {m.hidden_size:,}-wide token (dispatch bytes {m.hidden_size / m.moe.latent_size:.1f}x too high)."
        )
    if m.residual_streams > 1:
        out.append(
            f"Hyper-connections keep {m.residual_streams} copies of the residual: activation memory and "
            f"pipeline sends are {m.residual_streams}x what the model charges."
        )
    if memory.fixed_state_bytes_per_sequence(m):
        out.append(
            "One state slot per sequence: engines that keep extra slots (prefix caching, speculative "
            "verification) need more."
        )
    if m.ffn_free_layers:
        out.append(
            f"Layers here are mixer + MoE pairs ({m.num_layers}); llama.cpp's --n-cpu-moe counts the "
            "original one-mixer blocks."
        )
    return out
