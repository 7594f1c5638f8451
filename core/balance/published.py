"""EPLB's gain as the step-time model prices it, next to published EPLB measurements (issue #20).

Each published case (``catalogs/eplb_measurements.yaml``) names a model, a GPU, an EP group, a prefill batch
and throughputs measured under different expert placements. The model prices every placement with the same
per-layer expert loads (an assumption the file states: nobody published the loads) through
:func:`core.balance.cost.imbalance_cost`, and reports each row's throughput relative to the case's baseline
against the published ratio.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from core._util.checks import file_stamp, load_yaml
from core.balance import cost as balance_cost
from core.balance import metrics as balance
from core.catalog import Catalog
from core.deployment.bundle import Deployment
from core.deployment.specs import ParallelLayout

__all__ = ["PLACEMENTS", "EplbCase", "EplbResult", "EplbRow", "compare_case", "load_eplb_cases"]

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "catalogs" / "eplb_measurements.yaml"
PLACEMENTS = ("contiguous", "eplb", "balanced")


@dataclass(frozen=True)
class EplbRow:
    """One published throughput under one placement, and what the model gives for it (relative to the baseline)."""

    label: str
    placement: str
    redundant: int
    value: float

    def __post_init__(self):
        if not isinstance(self.placement, str) or self.placement not in PLACEMENTS:
            raise ValueError(f"placement must be one of {', '.join(PLACEMENTS)}, got {self.placement!r}")
        if not (isinstance(self.redundant, int) and 0 <= self.redundant <= 100_000):
            raise ValueError(f"redundant must be a whole number in 0..100,000, got {self.redundant!r}")
        if not (isinstance(self.value, (int, float)) and np.isfinite(self.value) and 0 < self.value < 1e30):
            raise ValueError(f"value must be a positive number, got {self.value!r}")


@dataclass(frozen=True)
class EplbResult:
    """One published row's throughput relative to its case's baseline, published and modelled."""

    row: EplbRow
    published_ratio: float
    model_ratio: float

    @property
    def gap(self) -> float:
        """Model ratio over published ratio, minus one (+0.05: the model's gain is 5% higher)."""
        return self.model_ratio / self.published_ratio - 1.0


@dataclass(frozen=True)
class EplbCase:
    id: str
    source: str
    model: str
    gpu: str
    stack: str
    precision: str
    ep: int
    nodes: int
    tokens_per_gpu: float
    context_len: int
    unit: str
    baseline: EplbRow
    rows: tuple[EplbRow, ...]
    zipf_s: float

    def __post_init__(self):
        if self.rows and not all(isinstance(r, EplbRow) for r in (self.baseline, *self.rows)):
            raise ValueError(f"case {self.id}: baseline and rows must be EplbRow objects")
        if not (isinstance(self.ep, int) and 1 <= self.ep <= 4096 and isinstance(self.nodes, int) and self.nodes >= 1):
            raise ValueError(f"case {self.id}: ep and nodes must be whole numbers >= 1")
        if not (
            isinstance(self.tokens_per_gpu, (int, float))
            and np.isfinite(self.tokens_per_gpu)
            and 0 < self.tokens_per_gpu <= 1e7
            and isinstance(self.context_len, int)
            and 1 <= self.context_len <= 10**8
        ):
            raise ValueError(f"case {self.id}: tokens_per_gpu and context_len must be positive")
        if not (isinstance(self.zipf_s, (int, float)) and np.isfinite(self.zipf_s) and 0 <= self.zipf_s <= 10):
            raise ValueError(f"case {self.id}: the Zipf exponent must be within 0 and 10")
        if not self.rows:
            raise ValueError(f"case {self.id}: no rows to compare")


def _row(raw, where: str) -> EplbRow:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected a mapping, got {type(raw).__name__}")
    try:
        return EplbRow(str(raw["label"]), str(raw["placement"]), int(raw.get("redundant", 0)), float(raw["value"]))
    except KeyError as exc:
        raise ValueError(f"{where}: missing {exc.args[0]!r}") from None
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {exc}") from None


def _case(c, i: int, s: float, name: str) -> EplbCase:
    if not isinstance(c, Mapping):
        raise ValueError(f"{name}: case {i} must be a mapping")
    where = f"{name}: case {str(c.get('id', i))[:80]}"
    try:
        rows = c["rows"]
        if not isinstance(rows, list):
            raise ValueError("rows must be a list")
        return EplbCase(
            str(c["id"]),
            str(c["source"]),
            str(c["model"]),
            str(c["gpu"]),
            str(c["stack"]),
            str(c["precision"]),
            int(c["ep"]),
            int(c["nodes"]),
            float(c["tokens_per_gpu"]),
            int(c["context_len"]),
            str(c["unit"]),
            _row(c["baseline"], f"{where} baseline"),
            tuple(_row(r, f"{where} row {j}") for j, r in enumerate(rows)),
            s,
        )
    except KeyError as exc:
        raise ValueError(f"{where}: missing {exc.args[0]!r}") from None
    except (TypeError, ValueError, OverflowError) as exc:
        msg = str(exc)
        raise ValueError(msg if msg.startswith(name) else f"{where}: {msg}"[:400]) from None


@functools.lru_cache(maxsize=4)
def _load(path: Path, mtime_ns: int, size: int) -> tuple[EplbCase, ...]:  # the file's stamp: an edit reloads
    name = path.name[:200]
    try:
        doc = load_yaml(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise ValueError(f"{name}: not a readable YAML file of EPLB cases ({type(e).__name__})") from None
    if not isinstance(doc, Mapping) or not isinstance(doc.get("cases"), list):
        raise ValueError(f"{name}: must be a mapping with an 'assumption' and a 'cases' list")
    assumption = doc.get("assumption")
    try:
        s = float(assumption["s"])  # type: ignore[index]
    except (TypeError, KeyError, ValueError):
        raise ValueError(f"{name}: assumption must be a mapping with the Zipf exponent s") from None
    return tuple(_case(c, i, s, name) for i, c in enumerate(doc["cases"]))


def load_eplb_cases(path: str | Path | None = None) -> tuple[EplbCase, ...]:
    """The published EPLB cases (default: the repository's ``catalogs/eplb_measurements.yaml``), re-read when the
    file changes. A malformed file or case raises ``ValueError`` naming the file and the case."""
    return _load(*file_stamp(path, DEFAULT_PATH, "EPLB case file"))


def compare_case(case: EplbCase, cat: Catalog) -> tuple[EplbResult, ...]:
    """Every row of ``case`` with its published and modelled throughput relative to the case's baseline.

    Modelled throughput is ``1 / step_s`` of a prefill step at ``tokens_per_gpu`` with the busiest GPU's expert
    load under the row's placement, the loads a Zipf(s) router per MoE layer. Rows that publish different
    throughputs for one placement (ATOM's 'naive' and 'biased' redundancy) get the same model value: the model
    has one EPLB, DeepSeek's."""
    if not isinstance(case, EplbCase):
        raise ValueError(f"case must be an EplbCase, got {type(case).__name__}")
    model, gpu = cat.model(case.model), cat.gpu(case.gpu)
    if model.moe is None:
        raise ValueError(f"case {case.id}: {model.name} has no routed experts")
    n, layers = model.moe.n_routed_experts, model.num_moe_layers
    loads = np.stack([balance.zipf_loads(n, case.zipf_s, seed=layer) for layer in range(layers)])
    layout = ParallelLayout(attention_tp=1, attention_dp=case.ep, ep=case.ep)
    d = Deployment(model, gpu, layout, case.precision, cat.efficiency_for(case.gpu, case.stack))

    @functools.cache
    def step_s(placement: str, redundant: int) -> float:
        plan = balance.placement_plan(loads, case.ep, case.nodes, model.moe.n_groups, redundant)
        cost = balance_cost.imbalance_cost(d, plan, "prefill", case.tokens_per_gpu, case.context_len, redundant)
        return {"contiguous": cost.before_s, "eplb": cost.after_s, "balanced": cost.balanced_s}[placement]

    base = case.baseline
    base_s = step_s(base.placement, base.redundant)
    return tuple(EplbResult(r, r.value / base.value, base_s / step_s(r.placement, r.redundant)) for r in case.rows)
