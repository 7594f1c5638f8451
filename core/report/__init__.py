"""The exportable report (build, the face) and the catalog's summary rows (catalog_rows)."""

from core.report.build import (
    Report,
    Section,
    build_report,
    compare_row,
)

__all__ = [
    "Report",
    "Section",
    "build_report",
    "compare_row",
]
