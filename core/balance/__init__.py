"""Expert-load balance: load metrics and EPLB (metrics, the face; eplb, _introsort), synthetic loads (loads), loads from files (loads_io), what imbalance costs in the step model (cost), published EPLB runs (published)."""

# the face is metrics's public API (its __all__); names defined elsewhere in the package are imported from their module
from core.balance.metrics import *  # noqa: F403
from core.balance.metrics import __all__  # noqa: F401
