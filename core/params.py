"""Parameter accounting under its first name: the implementation is :mod:`core.model.params` (sums over
the layer groups and FFN blocks); ``core.params.<name>`` keeps working."""

from core.model.params import *  # noqa: F403
from core.model.params import __all__  # noqa: F401
