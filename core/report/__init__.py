"""The exportable report (build, the face) and the catalog's summary rows (catalog_rows)."""

# the face is build's public API (its __all__); names defined elsewhere in the package are imported from their module
from core.report.build import *  # noqa: F403
from core.report.build import __all__  # noqa: F401
