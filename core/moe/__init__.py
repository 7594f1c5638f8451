"""MoE arithmetic: GEMM intensity against the ridge (intensity) and the decode-step roofline over batch sizes (decode). The routing arithmetic (tokens per expert, experts touched) is core.model.routing."""

# the face is decode's public API (its __all__); names defined elsewhere in the package are imported from their module
from core.moe.decode import *  # noqa: F403
from core.moe.decode import __all__  # noqa: F401
