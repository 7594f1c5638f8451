"""Saved scenarios: the interface and records (types), names and look-alikes (names), the SQL written once (sql) on SQLite (sqlite, with open_store) and PostgreSQL (postgres), who may do what (auth) and the role-checked store (guard). The face is sqlite's API (open_store and the records)."""

# the face is sqlite's public API (its __all__); names defined elsewhere in the package are imported from their module
from core.store.sqlite import *  # noqa: F403
from core.store.sqlite import __all__  # noqa: F401
