"""Input checks shared by every core module: each raises ``ValueError`` naming the argument and the
allowed range (the contract the pages rely on to show a message instead of a traceback)."""

from __future__ import annotations

import math

import numpy as np
import yaml

__all__ = [
    "amount",
    "file_stamp",
    "is_number",
    "is_whole",
    "load_yaml",
    "no_overflow",
    "nonneg",
    "nonneg_array",
    "read_yaml_list",
    "scalar_or_array",
    "whole",
]


# The checks below look at ``type(x)`` first: a plain ``float`` or ``int`` (what nearly every caller passes; a bool
# is neither, its type being ``bool``) answers without the isinstance chain; numpy scalars take the general path.


def is_number(x) -> bool:
    """A finite real number (bool excluded)."""
    t = type(x)
    if t is float or t is int:
        return math.isfinite(x)
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool) and math.isfinite(x)


def is_whole(x) -> bool:
    """An integer (bool excluded)."""
    return type(x) is int or (isinstance(x, (int, np.integer)) and not isinstance(x, bool))


def whole(name: str, x, lo: int = 1, hi: int = 10**9) -> int:
    """A whole number in ``lo..hi``."""
    if type(x) is int and lo <= x <= hi:
        return x
    if not (is_whole(x) and lo <= x <= hi):
        raise ValueError(f"{name} must be a whole number in {lo:,}..{hi:,}, got {x!r}")
    return int(x)


def amount(name: str, x, lo: float = 0.0, hi: float = 1e15, *, open_lo: bool = False) -> float:
    """A finite number in ``[lo, hi]`` (``(lo, hi]`` with ``open_lo``)."""
    if type(x) is float and (x > lo if open_lo else x >= lo) and x <= hi and math.isfinite(x):
        return x
    if not (is_number(x) and (x > lo if open_lo else x >= lo) and x <= hi):
        raise ValueError(f"{name} must be a finite number in {'(' if open_lo else '['}{lo:g}, {hi:g}], got {x!r}")
    return float(x)


def nonneg(name: str, x):
    """A finite number >= 0, or a numpy array of them (a scalar stays a float: the fast path)."""
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        if not (math.isfinite(x) and x >= 0):
            raise ValueError(f"{name} must be finite and >= 0")
        return float(x)
    a = np.asarray(x, dtype=np.float64)
    if np.any(~np.isfinite(a)) or np.any(a < 0):
        raise ValueError(f"{name} must be finite and >= 0")
    return a


def nonneg_array(name: str, x, hi: float = math.inf) -> np.ndarray:
    """A numpy array (any shape) of finite numbers in ``[0, hi]``."""
    a = np.asarray(x, dtype=np.float64)
    if np.any(~np.isfinite(a)) or np.any(a < 0) or np.any(a > hi):
        raise ValueError(f"{name} must be finite, >= 0 and <= {hi:g}")
    return a


def scalar_or_array(a):
    """A 0-d result as a float, an array as it is."""
    return float(a) if np.ndim(a) == 0 else a


def no_overflow(what: str, a):
    """``a`` when every entry is finite; a ValueError when the inputs were so large that it overflowed."""
    if isinstance(a, float):
        if math.isfinite(a):
            return a
    elif np.all(np.isfinite(a)):
        return scalar_or_array(a)
    raise ValueError(f"{what} overflows: the inputs are too large")


def file_stamp(path, default, what: str) -> tuple:
    """``(resolved path, mtime_ns, size)`` of the data file at ``path`` (``default`` when None): the key a
    cached loader re-reads on, so an edited file is read again. Anything that is not a readable file raises
    ``ValueError`` naming the path and ``what`` was expected there."""
    from pathlib import Path

    try:
        p = default if path is None else Path(path).resolve()
        if not p.is_file():
            raise ValueError(f"{str(p)[:200]}: no {what} there")
        stamp = p.stat()
    except (OSError, TypeError, ValueError) as e:
        raise ValueError(str(e)[:300] or f"not a path to the {what}") from None
    return p, stamp.st_mtime_ns, stamp.st_size


# libyaml's C parser with the same safe constructors as yaml.safe_load, 5-6x faster (the 1,128 validation
# cases: 2.4 s -> 0.42 s of every fresh server's first page, bench/RESULTS.md); the pure-Python one where a
# PyYAML build lacks libyaml.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str):
    """``yaml.safe_load`` of ``text`` through libyaml when available (raises ``yaml.YAMLError`` alike)."""
    return yaml.load(text, Loader=_SAFE_LOADER)  # a SafeLoader: no arbitrary objects


def read_yaml_list(path, key: str, what: str, *, sole: bool = False) -> list:
    """The list under ``key`` of the YAML mapping in the file at ``path`` (a ``pathlib.Path``); ``sole``: the only
    key allowed. An unreadable file, bad YAML or another shape raises ValueError naming the file and ``what`` it is."""
    name = path.name[:200]
    try:
        doc = load_yaml(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{name}: not a readable {what} ({type(e).__name__})") from None
    except yaml.YAMLError as e:
        raise ValueError(f"{name}: not valid YAML ({str(e)[:200]})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get(key), list) or (sole and set(doc) != {key}):
        only = f"with one key, {key!r}, a list" if sole else f"whose {key!r} is a list"
        raise ValueError(f"{name}: must be a mapping {only}")
    return doc[key]
