"""Speculative decoding's acceptance as a measured curve (issue #20), not one constant alpha.

``catalogs/acceptance.yaml`` holds published **mean accepted lengths** ``L(k)``: tokens emitted per
verification step, the target's bonus token included, when the drafter proposes ``k`` tokens, per model x
draft method x thinking mode, each with its source. ``L(0) = 1`` (no speculation).

For a chain drafter whose first drafts do not depend on ``k``, ``L(k) - L(k - 1)`` is the probability that
the first ``k`` drafts are all accepted, ``prod_{i <= k} a_i``, so the per-position (conditional) acceptance
is ``a_k = (L(k) - L(k-1)) / (L(k-1) - L(k-2))`` with ``L(0) = 1`` and ``L(-1) = 0``
(:func:`per_position_acceptance`). The planner's one-alpha chain formula is :func:`constant_alpha_length`;
the measured curves show why it overstates deep drafts (DeepSeek-V4-Pro MTP, thinking on: 1.79 tokens at
k = 1, flat at ~2.55 from k = 4, where alpha = 0.79 would give 3.3).

Published tables are kept as published: a table that falls at some ``k`` stops there and its later points
sit in ``published_beyond`` (never used by the functions here). Nothing is interpolated.
"""

from __future__ import annotations

import functools
import itertools
import math
import numbers
import operator
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path

import yaml

from core._util.checks import file_stamp, load_yaml

__all__ = [
    "ACCEPTANCE_PATH",
    "CONFIDENCES",
    "MAX_K",
    "METHODS",
    "AcceptanceCurve",
    "accepted_length",
    "constant_alpha_length",
    "curves_for",
    "load_curves",
    "per_position_acceptance",
]

ACCEPTANCE_PATH = Path(__file__).resolve().parents[2] / "catalogs" / "acceptance.yaml"
# the planner's method ids (core.deployment.specs.SpecDecodeConfig.method, minus "none") plus "dspark" (DeepSeek's DSpark
# block drafter, measured by InferenceX for DeepSeek-V4-Pro and Kimi-K3)
METHODS = ("mtp", "eagle3", "eagle", "p_eagle", "medusa", "draft_model", "ngram", "lookahead", "suffix", "dspark")
CONFIDENCES = ("published table", "published text", "derived from published", "read from chart")
MAX_K = 64  # deepest speculation a curve may describe
MAX_ALPHA_K = 1_000_000  # constant_alpha_length's bound on k
TOLERANCE = 1e-6  # how far outside [0, 1] a per-position acceptance may land from rounding before it is refused
_ZERO = 1e-12  # a difference of accepted lengths this small is a plateau (no draft reaches the next position)


def _k(x, what: str, lo: int, hi: int) -> int:
    """A whole number of speculative tokens in ``lo..hi`` (numpy integers accepted, bool refused)."""
    if isinstance(x, bool):
        raise ValueError(f"{what} must be a whole number in {lo}..{hi}, got {x!r}")
    try:
        k = operator.index(x)
    except TypeError:
        raise ValueError(f"{what} must be a whole number in {lo}..{hi}, got {type(x).__name__}") from None
    if not lo <= k <= hi:
        raise ValueError(f"{what} must be a whole number in {lo}..{hi}, got {k}")
    return k


def _real(x) -> float | None:
    """``x`` as a float when it is a finite real number (bool, text and huge integers excluded), else None."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        return None
    try:
        v = float(x)
    except (OverflowError, TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _length_table(table, what: str, label: str) -> dict[int, float]:
    """``{k: mean accepted length}`` with whole ``k`` in 1..MAX_K and ``1 <= L(k) <= k + 1``, sorted by ``k``."""
    if not isinstance(table, Mapping):
        raise ValueError(f"acceptance curve {label}: {what} must be a mapping k -> mean accepted length")
    out: dict[int, float] = {}
    for key, value in table.items():
        k = _k(key, f"acceptance curve {label}: {what} key", 1, MAX_K)
        v = _real(value)
        if v is None or not 1.0 <= v <= k + 1:
            raise ValueError(
                f"acceptance curve {label}: {what}[{k}] = {value!r} is outside [1, {k + 1}] (tokens per step with "
                f"{k} speculative tokens, the bonus token included)"
            )
        if k in out:
            raise ValueError(f"acceptance curve {label}: {what} gives k = {k} twice")
        out[k] = v
    return dict(sorted(out.items()))


@dataclass(frozen=True)
class AcceptanceCurve:
    """One published curve of mean accepted length per number of speculative tokens.

    ``accepted_length``: ``k -> L(k)``, k ascending, ``1 <= L(k) <= k + 1``, non-decreasing in ``k``.
    ``published_beyond``: points the source published past the first fall of its table (kept verbatim, unused).
    ``module_depth`` (MTP only): MTP modules the checkpoint ships; deeper drafts re-run them (the engine reuses
    the module cyclically). ``catalog_model``: whether ``model_id`` is a planner catalog id. Treat the dicts
    as read-only. Invalid data raises ``ValueError`` naming the entry.
    """

    model_id: str
    method: str
    thinking: bool | None
    accepted_length: dict[int, float] = field(hash=False)
    source: str
    confidence: str
    module_depth: int | None = None
    notes: str = ""
    id: str = ""
    catalog_model: bool = True
    engine: str = ""
    published_beyond: dict[int, float] = field(default_factory=dict, hash=False)

    @property
    def label(self) -> str:
        """The entry id, else ``model/method``: how messages name the curve."""
        return self.id or f"{self.model_id}/{self.method}"

    def __post_init__(self):
        for name in ("model_id", "source", "confidence", "notes", "id", "engine", "method"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"acceptance curve: {name} must be text, got {type(getattr(self, name)).__name__}")
        label = self.label[:120]
        if not self.model_id.strip() or len(self.model_id) > 200:
            raise ValueError(f"acceptance curve {label}: model_id must be 1-200 characters")
        if self.method not in METHODS:
            raise ValueError(f"acceptance curve {label}: unknown method {self.method!r}; one of {', '.join(METHODS)}")
        if self.thinking is not None and not isinstance(self.thinking, bool):
            raise ValueError(f"acceptance curve {label}: thinking must be true, false or null")
        if not isinstance(self.catalog_model, bool):
            raise ValueError(f"acceptance curve {label}: catalog_model must be true or false")
        if not self.source.strip():
            raise ValueError(f"acceptance curve {label}: source is required (where the numbers were published)")
        if self.confidence not in CONFIDENCES:
            raise ValueError(f"acceptance curve {label}: confidence must be one of {', '.join(CONFIDENCES)}")
        if self.module_depth is not None:
            if self.method != "mtp":
                raise ValueError(f"acceptance curve {label}: module_depth applies to method mtp only")
            depth = _k(self.module_depth, f"acceptance curve {label}: module_depth", 1, MAX_K)
            object.__setattr__(self, "module_depth", depth)
        table = _length_table(self.accepted_length, "accepted_length", label)
        if not table:
            raise ValueError(f"acceptance curve {label}: accepted_length needs at least one k")
        ks = list(table)
        for a, b in itertools.pairwise(ks):
            if table[b] < table[a]:
                raise ValueError(
                    f"acceptance curve {label}: accepted length decreases from {table[a]:g} at k = {a} to "
                    f"{table[b]:g} at k = {b}; keep the points after the fall in published_beyond"
                )
        beyond = _length_table(self.published_beyond, "published_beyond", label)
        if beyond and min(beyond) <= ks[-1]:
            raise ValueError(f"acceptance curve {label}: published_beyond must only hold k > {ks[-1]}")
        object.__setattr__(self, "accepted_length", table)
        object.__setattr__(self, "published_beyond", beyond)


_FIELDS = {f.name for f in fields(AcceptanceCurve)}
_REQUIRED = {"id", "model_id", "method", "thinking", "accepted_length", "source", "confidence"}


def _curve(entry, i: int, name: str) -> AcceptanceCurve:
    if not isinstance(entry, Mapping):
        raise ValueError(f"{name}: curves[{i}] must be a mapping")
    label = entry.get("id") if isinstance(entry.get("id"), str) and entry.get("id") else f"curves[{i}]"
    label = label[:120]
    unknown = sorted(str(k) for k in entry if k not in _FIELDS)
    if unknown:
        raise ValueError(f"{name}: entry {label}: unknown field(s) {', '.join(unknown)[:200]}")
    missing = sorted(_REQUIRED - set(entry))
    if missing:
        raise ValueError(f"{name}: entry {label}: missing field(s) {', '.join(missing)}")
    data = {k: ("" if v is None and k in ("notes", "engine") else v) for k, v in entry.items()}
    data.setdefault("published_beyond", {})
    try:
        return AcceptanceCurve(**data)
    except ValueError as e:
        raise ValueError(f"{name}: entry {label}: {e}") from None


@functools.lru_cache(maxsize=8)
def _load(path: Path, mtime_ns: int, size: int) -> tuple[AcceptanceCurve, ...]:  # the file's stamp: an edit reloads
    name = path.name[:200]
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{str(path)[:200]}: not a readable acceptance catalog ({type(e).__name__})") from None
    try:
        doc = load_yaml(text)
    except yaml.YAMLError as e:
        raise ValueError(f"{name}: not valid YAML ({str(e)[:200]})") from None
    if not isinstance(doc, Mapping) or not isinstance(doc.get("curves"), list):
        raise ValueError(f"{name}: must be a mapping with a 'curves' list (and optionally 'engine_knobs')")
    extra = sorted(str(k) for k in doc if k not in ("curves", "engine_knobs"))
    if extra:
        raise ValueError(f"{name}: unknown top-level key(s) {', '.join(extra)[:200]}")
    if not isinstance(doc.get("engine_knobs", {}), Mapping):
        raise ValueError(f"{name}: engine_knobs must be a mapping engine -> knobs")
    curves = tuple(_curve(entry, i, name) for i, entry in enumerate(doc["curves"]))
    seen: set[str] = set()
    for c in curves:
        if c.id in seen:
            raise ValueError(f"{name}: entry id {c.id!r} appears twice")
        seen.add(c.id)
    return curves


def load_curves(path: str | Path | None = None) -> tuple[AcceptanceCurve, ...]:
    """Every curve of the acceptance catalog (default: the repository's ``catalogs/acceptance.yaml``), loaded
    once per file version and cached. A malformed file or entry raises ``ValueError`` naming the file and the entry id."""
    return _load(*file_stamp(path, ACCEPTANCE_PATH, "acceptance catalog"))


def curves_for(model_id: str, method: str, curves: Iterable[AcceptanceCurve] | None = None) -> list[AcceptanceCurve]:
    """The curves published for ``model_id`` with ``method`` (catalog order; thinking modes and sources
    separate), from ``curves`` (default: :func:`load_curves`). A model without one gives ``[]``; an unknown
    method raises ``ValueError``."""
    if not isinstance(model_id, str) or not isinstance(method, str):
        raise ValueError("curves_for needs a model id and a method id (text)")
    if method not in METHODS:
        raise ValueError(f"unknown speculative method {method[:40]!r}; one of {', '.join(METHODS)}")
    pool = load_curves() if curves is None else curves
    if isinstance(pool, (str, bytes, Mapping)) or not isinstance(pool, Iterable):
        raise ValueError("curves must be a sequence of AcceptanceCurve")
    out = []
    for c in pool:
        if not isinstance(c, AcceptanceCurve):
            raise ValueError(f"curves must hold AcceptanceCurve objects, got {type(c).__name__}")
        if c.model_id == model_id and c.method == method:
            out.append(c)
    return out


def _checked(curve) -> AcceptanceCurve:
    if not isinstance(curve, AcceptanceCurve):
        raise ValueError(f"expected an AcceptanceCurve, got {type(curve).__name__}")
    return curve


def per_position_acceptance(curve: AcceptanceCurve) -> dict[int, float]:
    """Draft position ``i`` -> the probability that draft ``i`` is accepted given drafts ``1..i-1`` were.

    From ``L(k) - L(k-1) = P(first k accepted) = prod_{i<=k} a_i``: ``a_k = (L(k) - L(k-1)) / (L(k-1) - L(k-2))``
    with ``L(0) = 1`` and ``L(-1) = 0``, so ``a_1 = L(1) - 1``. Position ``k`` needs ``L(k)``, ``L(k-1)`` and
    ``L(k-2)``: only the consecutive run of published ``k`` starting at 1 gives positions (a curve published at
    k = 1, 2, 3, 5 gives positions 1-3; one published only at k = 7 gives none). Nothing is interpolated.
    Where ``L(k-1) = L(k-2)`` no draft ever reached position ``k - 1`` accepted, so ``a_k`` is undefined:
    positions stop there. Clamp-free: data that imply an ``a_i`` outside ``[0, 1]`` (beyond
    ``TOLERANCE``, which rounding may reach; such values are snapped to the bound) raise ``ValueError`` naming
    the entry and the position, e.g. a table whose gain grows again at a deeper ``k``.
    """
    curve = _checked(curve)
    table = curve.accepted_length
    lengths = {-1: 0.0, 0: 1.0}
    k = 1
    while k in table:
        lengths[k] = table[k]
        k += 1
    out: dict[int, float] = {}
    for k in range(1, max(lengths) + 1):
        gain, prev = lengths[k] - lengths[k - 1], lengths[k - 1] - lengths[k - 2]
        if prev <= _ZERO:
            if gain > _ZERO:
                raise ValueError(
                    f"acceptance curve {curve.label}: L({k}) > L({k - 1}) although no draft reached position "
                    f"{k - 1} (L({k - 1}) = L({k - 2}))"
                )
            break
        a = gain / prev
        if not -TOLERANCE <= a <= 1.0 + TOLERANCE:
            raise ValueError(
                f"acceptance curve {curve.label}: the data imply a per-position acceptance of {a:.3f} at position "
                f"{k} (L({k}) - L({k - 1}) = {gain:.4g} against L({k - 1}) - L({k - 2}) = {prev:.4g}); a chain "
                f"drafter's must be in [0, 1]"
            )
        out[k] = min(max(a, 0.0), 1.0)
    return out


def accepted_length(curve: AcceptanceCurve, k: int) -> float:
    """The measured mean accepted length at ``k`` speculative tokens (``1.0`` at ``k = 0``: no speculation).
    A ``k`` the source did not publish raises ``ValueError`` naming the published ``k`` (nothing is
    interpolated or extrapolated; ``published_beyond`` points are not used)."""
    curve = _checked(curve)
    k = _k(k, "k (speculative tokens)", 0, MAX_K)
    if k == 0:
        return 1.0
    table = curve.accepted_length
    if k not in table:
        ks = ", ".join(str(x) for x in table)
        raise ValueError(f"acceptance curve {curve.label}: k = {k} was not measured (published k: {ks})")
    return table[k]


def constant_alpha_length(alpha: float, k: int) -> float:
    """The one-alpha chain formula, the "what if" view: ``(1 - alpha^(k+1)) / (1 - alpha)`` tokens per step
    (``k + 1`` at ``alpha = 1``), e.g. alpha 0.8, k = 5 -> 3.689."""
    a = _real(alpha)
    if a is None or not 0.0 <= a <= 1.0:
        raise ValueError(f"alpha must be a number in [0, 1], got {alpha!r}"[:200])
    k = _k(k, "k (speculative tokens)", 0, MAX_ALPHA_K)
    if a == 1.0:
        return float(k + 1)
    return (1.0 - a ** (k + 1)) / (1.0 - a)
