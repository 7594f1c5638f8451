"""The scenario as a URL and back (url, the face) and the URL keys with their ranges (url_keys)."""

# the face is url's public API (its __all__); names defined elsewhere in the package are imported from their module
from core.scenario.url import *  # noqa: F403
from core.scenario.url import __all__  # noqa: F401
