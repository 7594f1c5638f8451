"""The scenario as a URL and back (url, the face) and the URL keys with their ranges (url_keys)."""

from core.scenario.url import (
    DEFAULT_SCENARIO,
    SPEC_METHODS,
    URL_KEYS,
    layout_from_sizes,
    resolved_layout,
    scenario_from_params,
    scenario_to_params,
)

__all__ = [
    "DEFAULT_SCENARIO",
    "SPEC_METHODS",
    "URL_KEYS",
    "layout_from_sizes",
    "resolved_layout",
    "scenario_from_params",
    "scenario_to_params",
]
