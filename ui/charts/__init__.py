"""Chart builders: plain functions from data to a Vega-Lite chart (no ``st.*``), one module per subject. The charts
pages draw most (lines, the speedup surface, the roofline, the validation scatter) are built as dicts
(``_spec.Spec``, 10-30x faster than Altair's object tree); the rest are Altair charts. Both have ``to_dict``.

Every chart states its scenario in the title, carries units on both axes, and uses font sizes that stay legible in
a PNG pasted into a slide. ``_style`` holds what they share (``style()``, palettes, ``INK``, ``HIGHLIGHT``, the
marker and segment-label helpers) and its docstring the accessibility rules every builder follows; import builders
and constants from ``ui.charts``, not from the modules.

- ``memory``: ``memory_stack_chart``, ``max_sequences_chart`` (and the component names and colours)
- ``series``: ``lines_chart``, ``grouped_bars_chart`` (the multi-series charts most pages use)
- ``roofline``: ``roofline_chart``
- ``speculative``: ``heatmap_chart``, ``speedup_vs_alpha_chart``
- ``balance``: ``expert_load_chart``
- ``offload``: ``placement_chart``, ``pool_bars_chart``
- ``validation``: ``predicted_vs_measured_chart``
"""

from __future__ import annotations

from ui.charts._style import (
    HIGHLIGHT,
    INK,
    INK_MUTED,
    SERIES_COLORS,
    SERIES_DASHES,
    SERIES_SHAPES,
    style,
    text_on,
)
from ui.charts.balance import expert_load_chart
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
    "expert_load_chart",
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
    "style",
    "text_on",
]
