"""The shipped leave-one-out table: every validation case's measured value, its prediction with the shipped
factors and its leave-one-out prediction, precomputed so the Validation page need not refit on first load.

``python -m bench.calibrate --write`` writes it (``format_loo_table``) next to the cases, at ``LOO_TABLE``
under the catalog root, with a fingerprint of the inputs it was computed from: the case files
(``validation/*.yaml``), the efficiency factors (``efficiency.yaml``) and what the served model of an aggregated
case reads besides (``served_step.yaml``: the engines' per-step costs; ``engines.yaml``: their attention-DP pacing). ``read_loo_table`` returns it only
while that fingerprint still matches; otherwise it says why (missing, stale, unreadable) and the page refits.
A unit test (tests/unit/test_loo_table.py) fails when the shipped table is stale.
"""

from __future__ import annotations

import csv
import hashlib
import io
from pathlib import Path

from core.catalog import Catalog
from core.validation.case_work import CaseResult

__all__ = ["LOO_COLUMNS", "LOO_TABLE", "format_loo_table", "inputs_fingerprint", "read_loo_table"]

LOO_TABLE = Path("validation") / "loo_predictions.csv"  # relative to the catalog root
LOO_COLUMNS = ("id", "metric", "family", "gpu", "measured", "predicted", "loo_predicted")
_FINGERPRINT = "# inputs_sha256: "
_HEADER = (
    "# Leave-one-out predictions of every validation case (core.validation.calibration.leave_one_out): measured, predicted\n"
    "# with the shipped factors, and predicted after refitting without the case. Written by\n"
    "# `python -m bench.calibrate --write`; do not edit by hand. The fingerprint covers validation/*.yaml,\n"
    "# efficiency.yaml, served_step.yaml and engines.yaml: when they change, the table is stale and the page refits.\n"
)


def inputs_fingerprint(cat: Catalog) -> str:
    """SHA-256 over the files the leave-one-out is computed from: every ``validation/*.yaml`` (by name),
    ``efficiency.yaml``, ``served_step.yaml`` and ``engines.yaml`` under ``cat.root``. Raises ``ValueError`` naming
    the file that cannot be read."""
    root = Path(cat.root)
    h = hashlib.sha256()
    served = [root / name for name in ("efficiency.yaml", "served_step.yaml", "engines.yaml")]
    for path in [*sorted((root / "validation").glob("*.yaml")), *served]:
        try:
            data = path.read_bytes()
        except OSError as e:
            raise ValueError(f"{path.name}: cannot be read for the leave-one-out fingerprint ({e.strerror})") from None
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + data + b"\0")
    return h.hexdigest()


def format_loo_table(results: list[CaseResult], fingerprint: str) -> str:
    """The CSV text of ``results`` (one row per case, in order; floats written exactly, as ``repr``) under a
    header that carries ``fingerprint`` (64 hex digits, from :func:`inputs_fingerprint`)."""
    if not (
        isinstance(fingerprint, str) and len(fingerprint) == 64 and all(c in "0123456789abcdef" for c in fingerprint)
    ):
        raise ValueError(
            f"fingerprint must be 64 lowercase hex digits (inputs_fingerprint), got {str(fingerprint)[:80]!r}"
        )
    out = io.StringIO()
    out.write(_HEADER + _FINGERPRINT + fingerprint + "\n")
    w = csv.writer(out, lineterminator="\n")
    w.writerow(LOO_COLUMNS)
    for r in results:
        loo = "" if r.loo_predicted is None else repr(float(r.loo_predicted))
        w.writerow([r.id, r.metric, r.family, r.gpu, repr(float(r.measured)), repr(float(r.predicted)), loo])
    return out.getvalue()


def read_loo_table(cat: Catalog) -> tuple[list[CaseResult] | None, str]:
    """The shipped table as ``CaseResult``s in the order of ``cat.validation_cases``, and ``""``; or ``None`` and
    why it cannot be used: missing, stale (its fingerprint is not that of the current inputs), unreadable, or
    not one row per case."""
    path = Path(cat.root) / LOO_TABLE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, "missing: no table is shipped with this catalog"
    except (OSError, UnicodeDecodeError) as e:
        return None, f"unreadable: {type(e).__name__}"
    try:
        current = inputs_fingerprint(cat)
    except ValueError as e:
        return None, f"unusable: {e}"
    stored = next((ln[len(_FINGERPRINT) :].strip() for ln in text.splitlines() if ln.startswith(_FINGERPRINT)), "")
    if stored != current:
        return (
            None,
            "stale: the validation cases, the efficiency factors or the served costs changed since it was written",
        )
    rows = list(csv.DictReader(ln for ln in text.splitlines() if not ln.startswith("#")))
    try:
        by_id = {
            r["id"]: CaseResult(
                id=r["id"],
                metric=r["metric"],
                family=r["family"],
                gpu=r["gpu"],
                measured=float(r["measured"]),
                predicted=float(r["predicted"]),
                loo_predicted=float(r["loo_predicted"]) if r["loo_predicted"] else None,
            )
            for r in rows
        }
    except (KeyError, TypeError, ValueError) as e:
        return None, f"unreadable: a row does not parse ({str(e)[:200]})"
    ids = [str(c["id"]) for c in cat.validation_cases]
    if len(rows) != len(ids) or set(by_id) != set(ids):
        return None, f"stale: {len(rows)} rows for {len(ids)} cases"
    return [by_id[i] for i in ids], ""
