"""Hardware: GPUs, hosts and interconnects (gpu), the efficiency factors per GPU and serving stack (efficiency), measured collective latencies (collectives). The package's face is gpu's API."""

# the face is gpu's public API (its __all__); names defined elsewhere in the package are imported from their module
from core.hardware.gpu import *  # noqa: F403
from core.hardware.gpu import __all__  # noqa: F401
