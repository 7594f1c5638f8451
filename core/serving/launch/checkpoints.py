"""Which published checkpoint a launch command serves for the planned precision (``catalogs/checkpoints.yaml``),
and whether the model needs ``--trust-remote-code``.

The catalog model's own ``hf_id`` is one checkpoint (its precision read from its config.json's quantization_config,
``ModelSpec.checkpoint_precision``); the YAML adds the other published precisions with their source. The choice
matches the routed experts' dtype (a dense model's: its weights), the bulk of the bytes the plan budgets:

* a checkpoint stored in the planned dtype: served as published;
* none, but a wider one (bf16 for an fp8 plan): served with on-the-fly ``--quantization fp8`` where the plan is fp8
  (vLLM and SGLang quantise on load; TensorRT-LLM runs only pre-quantised checkpoints, said in a note);
* a 4-bit plan with no 4-bit checkpoint: a placeholder path the user fills with a quantised copy (never the
  wider checkpoint, whose weights would not fit the plan's memory);
* only narrower ones (an fp8 plan of gpt-oss, published in mxfp4): the published one, and a note that the plan
  assumed wider weights.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from core._util.checks import load_yaml
from core.deployment.specs import Precision
from core.model import ModelSpec

__all__ = ["CHECKPOINTS_FILE", "REPO_ID", "Checkpoint", "CheckpointChoice", "checkpoint_for", "model_checkpoints"]

CHECKPOINTS_FILE = Path(__file__).resolve().parents[3] / "catalogs" / "checkpoints.yaml"
# storage bits per weight, to rank checkpoints wider or narrower than the plan (GGUF block types: below 8)
_BITS = {"fp32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "int8": 8, "int4": 4, "nvfp4": 4, "mxfp4": 4}
# what a repository id or path may look like to be pasted into a shell command (an imported config's name may not)
REPO_ID = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_./-]{0,199}")
_ON_THE_FLY = ("fp8",)  # what vLLM's and SGLang's --quantization quantise a bf16 checkpoint to on load
_CONFIDENCE = ("primary", "secondary")


@dataclass(frozen=True)
class Checkpoint:
    repo: str
    experts: str  # routed experts' dtype as stored (a dense model: its linear layers')
    weights: str | None  # the other linear layers' dtype, None where the source does not say
    source: str
    confidence: str = "primary"
    note: str = ""


@dataclass(frozen=True)
class CheckpointChoice:
    model_id: str  # the repository id (or placeholder path) the command loads
    quantization: str | None  # on-the-fly --quantization for vLLM / SGLang, None to load as stored
    trust_remote_code: bool
    notes: tuple[str, ...]
    checkpoint: Checkpoint | None  # None: a placeholder for a checkpoint nobody publishes


def _dtype(value, where: str) -> str:
    if value not in _BITS:
        raise ValueError(f"{CHECKPOINTS_FILE.name}: {where} dtype {value!r} is not one of {', '.join(_BITS)}")
    return value


@functools.lru_cache(maxsize=1)
def _catalog() -> dict[str, dict]:
    data = load_yaml(CHECKPOINTS_FILE.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{CHECKPOINTS_FILE.name}: a mapping of model ids is expected")
    out: dict[str, dict] = {}
    for mid, entry in data.items():
        if not isinstance(entry, dict) or set(entry) - {"native", "trust_remote_code", "checkpoints"}:
            raise ValueError(f"{CHECKPOINTS_FILE.name}: {mid}: keys are native, trust_remote_code, checkpoints")
        cps = []
        for i, c in enumerate(entry.get("checkpoints") or []):
            where = f"{mid} checkpoints[{i}]"
            if not (isinstance(c, dict) and isinstance(c.get("repo"), str) and isinstance(c.get("source"), str)):
                raise ValueError(f"{CHECKPOINTS_FILE.name}: {where} needs a repo and a source")
            if c.get("confidence", "primary") not in _CONFIDENCE:
                raise ValueError(f"{CHECKPOINTS_FILE.name}: {where} confidence must be one of {_CONFIDENCE}")
            w = c.get("weights")
            cps.append(
                Checkpoint(
                    c["repo"],
                    _dtype(c.get("experts"), where),
                    None if w is None else _dtype(w, where),
                    c["source"],
                    c.get("confidence", "primary"),
                    str(c.get("note", "")),
                )
            )
        native = entry.get("native")
        if native is not None and not (isinstance(native, dict) and isinstance(native.get("source"), str)):
            raise ValueError(f"{CHECKPOINTS_FILE.name}: {mid} native needs weights, experts and a source")
        out[mid] = {"checkpoints": tuple(cps), "native": native, "trust": entry.get("trust_remote_code")}
    return out


def model_checkpoints(model: ModelSpec) -> tuple[Checkpoint, ...]:
    """The published checkpoints of ``model``: its own ``hf_id`` first, then ``catalogs/checkpoints.yaml``'s."""
    entry = _catalog().get(model.id, {})
    out: list[Checkpoint] = []
    if model.hf_id:
        native, cp = entry.get("native"), model.checkpoint_precision or {}
        if native:
            experts, weights, src = _dtype(native.get("experts"), "native"), native.get("weights"), native["source"]
        else:
            weights = cp.get("weights", "bf16")
            experts, src = cp.get("routed_experts") or weights, f"catalogs/models/{model.id}/model.yaml hf_id"
            src += " (precision from its config.json quantization_config)" if cp else " (no quantization_config: bf16)"
        out.append(Checkpoint(model.hf_id, experts, weights, src))
    return (*out, *(c for c in entry.get("checkpoints", ()) if c.repo != model.hf_id))


def checkpoint_for(model: ModelSpec, precision: Precision | str) -> CheckpointChoice:
    """The checkpoint a command for ``model`` at ``precision`` loads, how, and what the user must know."""
    prec = Precision.of(precision)
    want, rest = (prec.expert_dtype if model.is_moe else prec.weights), prec.weights
    bits = _BITS.get(want, 4)
    trust = bool(_catalog().get(model.id, {}).get("trust"))
    cps = model_checkpoints(model)
    if not cps:
        return CheckpointChoice(
            "path/to/model",
            None,
            trust,
            (f"{model.name} has no Hugging Face repository id: replace path/to/model with its path.",),
            None,
        )
    notes: list[str] = []
    exact = [c for c in cps if c.experts == want]
    if exact:
        c = next((c for c in exact if c.weights == rest), exact[0])
        notes.append(_cite(c, want))
        if c.weights and c.weights != rest and model.is_moe:
            notes.append(f"{c.repo} stores the non-expert weights in {c.weights}; the plan assumes {rest}.")
        return CheckpointChoice(c.repo, None, trust, tuple(notes), c)
    wider = sorted((c for c in cps if _BITS[c.experts] > bits), key=lambda c: _BITS[c.experts])
    if want in _ON_THE_FLY and wider:
        c = wider[0]
        notes.append(
            f"No published {want} checkpoint of {model.name} is known (catalogs/checkpoints.yaml): vLLM and SGLang load "
            f"{c.repo} ({c.experts}) and quantise it to {want} on load (--quantization {want}); TensorRT-LLM runs only "
            "pre-quantised checkpoints: quantise it offline with NVIDIA Model Optimizer and pass that path."
        )
        return CheckpointChoice(c.repo, want, trust, tuple(notes), c)
    if wider:  # a 4-bit plan: the wider weights would not fit the plan's memory
        slug = model.id if model.id[:1].isalnum() else "model"
        path = f"path/to/{slug}-{want}"
        notes.append(
            f"No published {want} checkpoint of {model.name} is known (catalogs/checkpoints.yaml): quantise "
            f"{wider[0].repo} ({wider[0].experts}) to {want} (NVIDIA Model Optimizer for nvfp4) and replace {path} with it."
        )
        return CheckpointChoice(path, None, trust, tuple(notes), None)
    c = max(cps, key=lambda c: _BITS[c.experts])
    notes.append(
        f"{model.name} is published in {c.experts} at most ({c.repo}); the plan assumes {want} weights: the command "
        f"serves the published checkpoint, whose weights are smaller than planned (plan with {c.experts} to match)."
    )
    return CheckpointChoice(c.repo, None, trust, tuple(notes), c)


def _cite(c: Checkpoint, want: str) -> str:
    extra = f" ({c.note})" if c.note else ""
    return f"Checkpoint {c.repo}: {want} as published{extra}; source: {c.source} [{c.confidence}]."
