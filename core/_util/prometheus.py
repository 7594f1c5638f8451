"""One Prometheus / OpenMetrics sample line, read the same way by every scrape parser (expert loads in
:mod:`core.balance.loads_io`, speculative-decoding counters in :mod:`core.speculative.live`).

A sample is ``name{labels} value [timestamp]``, optionally followed by an OpenMetrics exemplar
``# {labels} value [timestamp]`` (which refers to a trace, not to the sample's value, and is dropped)."""

from __future__ import annotations

import re

__all__ = ["SAMPLE_LINE"]

SAMPLE_LINE = re.compile(
    r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?P<labels>[^}]*)\})?\s+(?P<value>\S+)(\s+\S+)?"
    r"(\s+#\s+\{[^}]*\}\s+\S+(\s+\S+)?)?$"
)
