"""The model against published measurements: predict a case (prediction, the face), calibration and leave-one-out (calibration, loo_table), the cases (cases), the aiconfigurator comparison (comparison)."""

# the face is prediction's public API (its __all__); names defined elsewhere in the package are imported from their module
from core.validation.prediction import *  # noqa: F403
from core.validation.prediction import __all__  # noqa: F401
