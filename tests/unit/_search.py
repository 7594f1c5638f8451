"""The deployment a layout search starts from in the tests: a model on a cluster at a precision, workload, memory
assumptions and serving stack, on a one-GPU placeholder layout (:func:`core.serving.layout.recommend` varies the
layout; so do :func:`core.serving.disagg.size_pools` and the launch commands, which take the plan's)."""

from __future__ import annotations

from core.catalog import load_catalog
from core.deployment.bundle import Deployment
from core.deployment.specs import MemoryAssumptions, ParallelLayout, Precision, SpecDecodeConfig, Workload
from core.hardware import ClusterSpec

CAT = load_catalog()


def search(
    model,
    cluster: ClusterSpec,
    workload: Workload | None = None,
    *,
    precision: Precision | str = "fp8",
    stack: str = "sglang",
    assumptions: MemoryAssumptions | None = None,
    spec: SpecDecodeConfig | None = None,
) -> Deployment:
    """``model`` on ``cluster`` (the old defaults of the search: FP8, SGLang, the default memory assumptions)."""
    return Deployment(
        model,
        cluster.gpu,
        ParallelLayout(),
        precision,
        CAT.efficiency_for(cluster.gpu.id, stack),
        cluster=cluster,
        workload=workload if workload is not None else Workload(),
        assumptions=assumptions if assumptions is not None else MemoryAssumptions(),
        spec=spec if spec is not None else SpecDecodeConfig(),
    )
