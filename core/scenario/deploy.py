"""The scenario resolved into a :class:`core.deployment.bundle.Deployment`, once: the catalog lookups (model, GPU,
draft model), the default layout (the layout search's best plan, :func:`core.scenario.url.resolved_layout`), the
efficiency factors of the GPU under the serving stack (inheritance resolved), and the scenario's served calibration.
The pages (``ui.scenario.page``), the CLI and the report call it; every formula above the primitives takes the value it
returns."""

from __future__ import annotations

from core.catalog import Catalog
from core.deployment.bundle import Deployment
from core.deployment.specs import ClusterSpec, Scenario
from core.hardware.served_step import served_step_cost
from core.model import ModelSpec
from core.scenario.url import resolved_layout

__all__ = ["resolve"]


def resolve(scenario: Scenario, catalog: Catalog, model: ModelSpec | None = None) -> Deployment:
    """The deployment ``scenario`` names, with ``model`` in place of the catalog's (an imported config) where given.
    Raises ValueError naming the problem: an unknown id (with the closest ones), or a layout the model cannot run
    (:class:`core.deployment.bundle.InvalidLayout`, every problem listed)."""
    if not isinstance(scenario, Scenario):
        raise ValueError(f"scenario must be a Scenario, got {type(scenario).__name__}")
    model = model if model is not None else catalog.model(scenario.model_id)
    gpu = catalog.gpu(scenario.gpu_id)
    cluster = ClusterSpec(gpu=gpu, num_nodes=scenario.num_nodes, gpus_per_node=scenario.gpus_per_node)
    return Deployment(
        model,
        gpu,
        resolved_layout(scenario, model),
        scenario.precision,
        catalog.efficiency_for(gpu.id, scenario.serving_stack),
        cluster=cluster,
        workload=scenario.workload,
        assumptions=scenario.memory,
        spec=scenario.spec,
        draft=catalog.draft_model_for(scenario.spec),
        calibration=scenario.calibration,
        served_step=served_step_cost(scenario.serving_stack),
    )
