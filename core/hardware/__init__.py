"""Hardware: GPUs, hosts and interconnects (gpu), the efficiency factors per GPU and serving stack (efficiency), measured collective latencies (collectives). The package's face is gpu's API."""

from core.hardware.gpu import (
    RUNTIME_MEMORY_RATIO_HIGH,
    RUNTIME_MEMORY_RATIO_LOW,
    ClusterSpec,
    GPUSpec,
    HostLink,
    HostSpec,
    InterconnectSpec,
    PrecisionSupport,
    precision_support,
)

__all__ = [
    "RUNTIME_MEMORY_RATIO_HIGH",
    "RUNTIME_MEMORY_RATIO_LOW",
    "ClusterSpec",
    "GPUSpec",
    "HostLink",
    "HostSpec",
    "InterconnectSpec",
    "PrecisionSupport",
    "precision_support",
]
