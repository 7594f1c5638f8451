"""MoE arithmetic: routing (tokens per expert, experts touched), GEMM intensity against the ridge (intensity) and the decode-step roofline over batch sizes (decode). The face is all three's API, as pages have always called it."""

# the face is decode's public API (its __all__); names defined elsewhere in the package are imported from their module
from core.moe.decode import *  # noqa: F403
from core.moe.decode import __all__  # noqa: F401
