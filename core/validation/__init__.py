"""The model against published measurements: predict a case (prediction, the face), calibration and leave-one-out (calibration, loo_table), the cases (cases), the aiconfigurator comparison (comparison)."""

from core.validation.prediction import (
    METRIC_UNITS,
    METRICS,
    CaseResult,
    calibrate,
    calibration_note,
    case_family,
    error_summary,
    fitted_families,
    leave_one_out,
    owner_of,
    predict,
    predict_with,
    strip_fitted,
)

__all__ = [
    "METRICS",
    "METRIC_UNITS",
    "CaseResult",
    "calibrate",
    "calibration_note",
    "case_family",
    "error_summary",
    "fitted_families",
    "leave_one_out",
    "owner_of",
    "predict",
    "predict_with",
    "strip_fitted",
]
