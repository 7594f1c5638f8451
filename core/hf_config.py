"""The config.json importer under its first name: everything lives in :mod:`core.hf` (one reader per
family, a reader registry); this module keeps ``core.hf_config.<name>`` working for code that imports it."""

from core.hf import *  # noqa: F403
from core.hf import __all__  # noqa: F401
