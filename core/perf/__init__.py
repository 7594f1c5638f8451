"""The step-time model: one step of prefill or decode on the most loaded GPU (step), the works each layer runs (kernels), the step's configuration (step_config), per-layer communication (layer_comm) and all-to-all dispatch (dispatch). The face is step's API."""

# the face is step's public API (its __all__); names defined elsewhere in the package are imported from their module
from core.perf.step import *  # noqa: F403
from core.perf.step import __all__  # noqa: F401
