"""The scenario resolved into a :class:`core.deployment.bundle.Deployment`, once: the catalog lookups (model, GPU,
draft model), the default layout (the layout search's best plan, :func:`core.scenario.url.resolved_layout`), the
efficiency factors of the GPU under the serving stack (inheritance resolved), and the scenario's served calibration.
The pages (``ui.scenario.page``), the CLI and the report call it; every formula above the primitives takes the value it
returns."""

from __future__ import annotations

from core.catalog import Catalog
from core.deployment.bundle import Deployment
from core.deployment.specs import Scenario
from core.model import ModelSpec
from core.scenario.url import resolved_layout
from core.serving.layout import search_deployment

__all__ = ["resolve"]


def resolve(scenario: Scenario, catalog: Catalog, model: ModelSpec | None = None) -> Deployment:
    """The deployment ``scenario`` names, with ``model`` in place of the catalog's (an imported config) where given.
    Raises ValueError naming the problem: an unknown id (with the closest ones), or a layout the model cannot run
    (:class:`core.deployment.bundle.InvalidLayout`, every problem listed)."""
    if not isinstance(scenario, Scenario):
        raise ValueError(f"scenario must be a Scenario, got {type(scenario).__name__}")
    start = search_deployment(scenario, catalog, model)  # the lookups, efficiency, served costs, calibration
    return start.with_layout(resolved_layout(scenario, start.model))
