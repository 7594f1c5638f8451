"""Chart builders: plain functions from data to a Vega-Lite spec (no ``st.*``), one module per subject. Each returns
a ``_spec.Spec``: the Vega-Lite dict itself, built directly (10-30x faster than Altair's object tree, which cost a
chart-heavy page's first run most of its second), with Altair's ``to_dict(validate=...)`` and ``properties()``;
validation uses the Vega-Lite schema Altair ships.

Every chart states its scenario in the title, carries units on both axes, and uses font sizes that stay legible in
a PNG pasted into a slide. ``_style`` holds what they share (``style_spec()``, palettes, ``INK``, ``HIGHLIGHT``, the
marker and segment-label helpers) and its docstring the accessibility rules every builder follows; import builders
and constants from ``ui.charts``, not from the modules.

- ``memory``: ``memory_stack_chart``, ``max_sequences_chart`` (and the component names and colours)
- ``series``: ``lines_chart``, ``grouped_bars_chart`` (the multi-series charts most pages use)
- ``roofline``: ``roofline_chart``
- ``speculative``: ``heatmap_chart``, ``speedup_vs_alpha_chart``
- ``balance``: ``expert_load_chart``
- ``offload``: ``placement_chart``, ``pool_bars_chart``
- ``validation``: ``predicted_vs_measured_chart``
- ``frontier``: ``frontier_chart`` (throughput vs interactivity)
- ``breakdown``: ``token_time_chart`` (where the time goes: GPU time per token of each plan, by kernel)
"""

from __future__ import annotations

from ui.charts._spec import Spec, TooManyRowsError
from ui.charts._style import (
    HIGHLIGHT,
    INK,
    INK_MUTED,
    SERIES_COLORS,
    SERIES_DASHES,
    SERIES_SHAPES,
    style_spec,
    text_on,
)
from ui.charts.balance import expert_load_chart
from ui.charts.breakdown import TIME_COLORS, token_time_chart
from ui.charts.frontier import frontier_chart
from ui.charts.memory import COMPONENT_COLORS, COMPONENT_LABELS, max_sequences_chart, memory_stack_chart
from ui.charts.offload import PLACE_COLORS, placement_chart, pool_bars_chart
from ui.charts.roofline import roofline_chart
from ui.charts.series import grouped_bars_chart, lines_chart
from ui.charts.speculative import heatmap_chart, speedup_vs_alpha_chart
from ui.charts.validation import predicted_vs_measured_chart

__all__ = [
    "COMPONENT_COLORS",
    "COMPONENT_LABELS",
    "HIGHLIGHT",
    "INK",
    "INK_MUTED",
    "PLACE_COLORS",
    "SERIES_COLORS",
    "SERIES_DASHES",
    "SERIES_SHAPES",
    "TIME_COLORS",
    "Spec",
    "TooManyRowsError",
    "expert_load_chart",
    "frontier_chart",
    "grouped_bars_chart",
    "heatmap_chart",
    "lines_chart",
    "max_sequences_chart",
    "memory_stack_chart",
    "placement_chart",
    "pool_bars_chart",
    "predicted_vs_measured_chart",
    "roofline_chart",
    "speedup_vs_alpha_chart",
    "style_spec",
    "text_on",
    "token_time_chart",
]
