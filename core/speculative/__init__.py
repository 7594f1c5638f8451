"""Speculative decoding: closed forms and the batch-aware speedup (closed_form, the face), measured acceptance curves (acceptance, measured), the simulator (sim), live engine scrapes (live)."""

# the face is closed_form's public API (its __all__); names defined elsewhere in the package are imported from their module
from core.speculative.closed_form import *  # noqa: F403
from core.speculative.closed_form import __all__  # noqa: F401
