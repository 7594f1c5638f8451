"""One section of the report: its figures (label, value with unit), table rows, notes and code to copy. The
commands and the build both fill sections; neither needs the other to do so."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Section"]


@dataclass
class Section:
    title: str
    figures: list[tuple[str, str]] = field(default_factory=list)  # (label, value with unit)
    table: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    code: list[tuple[str, str]] = field(default_factory=list)  # (label, shell command or config to copy)
