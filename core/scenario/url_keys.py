"""The scenario URL's keys: what each sets and its allowed range, and the warnings for unknown or repeated keys
(the codec is :mod:`core.scenario`)."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from core._util.validated import bounds_text
from core.deployment.specs import SPEC_METHOD_KINDS, MemoryAssumptions, Scenario, SingleBox, SpecDecodeConfig, Workload
from core.hardware.efficiency import SERVING_STACKS
from core.model.dtypes import DISPATCH_DTYPES

__all__ = ["URL_KEYS", "key_warnings", "one", "show"]

_MAX_VALUE_CHARS = 200


def _range(model, field: str, what: str) -> str:
    """What a URL key sets and its allowed range, from the field's declaration (what the model validates)."""
    return f"{what}, {bounds_text(model, field)}"


# URL key -> what it sets
URL_KEYS: dict[str, str] = {
    "model": "model id (catalog)",
    "gpu": "GPU id (catalog)",
    "nodes": _range(Scenario, "num_nodes", "number of nodes"),
    "gpn": _range(Scenario, "gpus_per_node", "GPUs per node"),
    "w": "weight dtype",
    "ex": "routed-expert dtype (omit = same as weights)",
    "kv": "KV-cache dtype",
    "a2a": f"all-to-all dispatch dtype ({' | '.join(DISPATCH_DTYPES)})",
    "lstate": "linear-attention / SSM state dtype where the engine overrides the checkpoint's (bf16 | fp32 | checkpoint; "
    "omit = checkpoint)",
    "stack": f"serving stack whose kernels time the steps ({' | '.join(SERVING_STACKS)}; omit = sglang)",
    "batch": _range(Workload, "batch", "concurrent sequences"),
    "isl": _range(Workload, "input_len", "input tokens per sequence"),
    "osl": _range(Workload, "output_len", "output tokens per sequence"),
    "reuse": "% of each prompt a warm prefix cache serves, 0-99 (omit = 0: every prompt prefilled whole)",
    "tp": "attention tensor parallel size (omit all layout keys = default layout)",
    "etp": "expert tensor parallel size (EP = GPUs per stage / etp)",
    "pp": "pipeline stages",
    "dp": "data-parallel replicas",
    "dcp": "decode context parallel size within attention TP (vLLM; with the layout keys; omit = 1)",
    "sd": "speculative method: " + " | ".join(SPEC_METHOD_KINDS),
    "draft": "draft model id (with sd=draft_model)",
    "dw": "draft weight dtype (omit = the target's)",
    "gamma": _range(SpecDecodeConfig, "num_speculative_tokens", "speculative tokens per step"),
    "alpha": _range(SpecDecodeConfig, "acceptance_rate", "acceptance rate per draft token")
    + " (omit = the method's default)",
    "cfg": "an imported config.json (zlib + base64url) when model is custom-...",
    "c": _range(SpecDecodeConfig, "draft_cost", "draft cost relative to a target forward")
    + " (omit = the method's default)",
    # the URL reader's range (core.scenario), narrower than MemoryAssumptions' "above 0": below 5% of a GPU's memory
    # no engine starts
    "util": "gpu_memory_utilization, 0.05-1",
    "reserve": _range(MemoryAssumptions, "runtime_reserve_gb", "runtime reserve per GPU in GB"),
    "mbt": _range(MemoryAssumptions, "max_num_batched_tokens", "max batched tokens per step"),
    "act": _range(MemoryAssumptions, "activation_factor", "activation factor"),
    "red": _range(MemoryAssumptions, "redundant_experts", "redundant experts (EPLB)"),
    "host": "single-box host id (catalog hosts.yaml)",
    "bgpu": "single-box GPU id, or 'none' on a unified-memory host",
    "bn": _range(SingleBox, "n_gpus", "single-box GPU count"),
    "ncm": _range(SingleBox, "n_cpu_moe", "llama.cpp --n-cpu-moe") + " (omit = the fewest that fit)",
    "q": "single-box quantisation (any weight dtype, GGUF types included)",
    "bctx": _range(SingleBox, "context_len", "single-box context length in tokens"),
    "cdec": "calibrated decode step-time scale, 0.2-5 (fitted on one's own benchmark results; omit = uncalibrated)",
    "cpre": "calibrated prefill step-time scale, 0.2-5 (with cdec)",
    "cttft": "calibrated per-request TTFT offset in seconds, 0-10 (with cdec; omit = 0)",
    "csrc": "what the calibration was fitted on (file, tool, date; at most 200 characters)",
    "cruns": "benchmark runs the calibration was fitted on, 1-10,000",
    "cres": "the calibration's relative RMS residual, 0-100 (0.05 = 5%)",
}


def one(params: Mapping[str, Any], key: str) -> str | None:
    """The value of ``key`` (the last one when repeated), at most 201 characters, stripped; None when absent."""
    v = params.get(key)
    if isinstance(v, (list, tuple)):
        v = v[-1] if v else None
    if v is None:
        return None
    return str(v)[: _MAX_VALUE_CHARS + 1].strip()


def show(v: str) -> str:
    """A user value quoted for a message, cut at 40 characters."""
    return repr(v if len(v) <= 40 else v[:40] + "...")


def key_warnings(params: Mapping[str, Any], most: int = 5) -> list[str]:
    """A warning naming the keys this codec does not know (a typo such as ``gpus=`` for ``gpn=`` would
    otherwise be dropped without a word), and one naming the keys given more than once with different values.
    A repeated key takes its last value, as ``st.query_params[key]`` and ``dict(parse_qsl(...))`` do."""
    out: list[str] = []
    unknown = [str(k) for k in params if k not in URL_KEYS]
    near = [difflib.get_close_matches(k.lower()[:40], list(URL_KEYS), n=1, cutoff=0.75) for k in unknown[:most]]
    shown = [show(k) + (f" (did you mean {c[0]!r}?)" if c else "") for k, c in zip(unknown, near, strict=False)]
    repeated = [
        f"URL key {k!r} is given {len(v)} times; using the last value, {show(str(v[-1]).strip())}"
        for k, v in ((k, params.get(k)) for k in URL_KEYS)
        if isinstance(v, (list, tuple)) and len({str(x) for x in v}) > 1
    ]
    if unknown:
        more = f" and {len(unknown) - most} more" if len(unknown) > most else ""
        keys = "keys" if len(unknown) > 1 else "key"
        out.append(f"unknown URL {keys} {', '.join(shown)}{more} ignored; known keys: {', '.join(URL_KEYS)}")
    if repeated:
        out.append("; ".join(repeated[:most]) + (f"; and {len(repeated) - most} more" if len(repeated) > most else ""))
    return out
