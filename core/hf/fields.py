"""Reading a Hugging Face ``config.json`` safely: size-, depth- and value-limited JSON, and typed access to
its fields with messages that name the field and the family."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

__all__ = [
    "CHART_MAX_ROWS",
    "EXPERTS_WHY",
    "LAYERS_WHY",
    "MAX_CONFIG_BYTES",
    "MAX_FIELD_INT",
    "MAX_LAYERS",
    "MAX_ROUTED_EXPERTS",
    "Fields",
    "check_integers",
    "parse_config_text",
]

MAX_CONFIG_BYTES = 1_000_000  # a real config.json is a few KB; refuse anything absurd
_MAX_DEPTH = 20

# What the pages can draw bounds what the importer accepts (issue 21): a config it accepts renders every
# page. The chart builders refuse a chart of more than 5,000 rows (ui.charts._spec.TooManyRowsError, the limit
# of Altair's default data transformer).
CHART_MAX_ROWS = 5_000
# The Balance page draws one bar per routed expert. The catalog's most: Kimi-K3, 896.
MAX_ROUTED_EXPERTS = CHART_MAX_ROWS
EXPERTS_WHY = f"the Balance page draws one bar per routed expert, at most {CHART_MAX_ROWS:,}"
# The Single box page draws three rows per layer (attention, dense FFN / shared experts, routed experts):
# 3 x 1,666 = 4,998. The catalog's most: Llama-3.1-405B, 126.
MAX_LAYERS = CHART_MAX_ROWS // 3
LAYERS_WHY = f"the Single box page draws three rows per layer, at most {CHART_MAX_ROWS:,}"
# Any integer field. Contexts are computed arithmetically (never by enumerating positions), so
# max_position_embeddings needs no tighter bound: 10**12 positions size as fast as Llama 4 Scout's 10,485,760.
# Every integer anywhere in a config (list elements and fields the planner does not read included) is within
# +-MAX_FIELD_INT (check_integers); a field the planner reads may have a tighter bound, said in its message.
MAX_FIELD_INT = 10**12


def parse_config_text(text: str | bytes, *, max_bytes: int = MAX_CONFIG_BYTES) -> dict[str, Any]:
    """Parse the text of a config.json safely: size-limited, depth-limited, must be a JSON object."""
    if isinstance(text, bytes):
        if len(text) > max_bytes:
            raise ValueError(f"config.json is {len(text):,} bytes; the limit is {max_bytes:,} bytes")
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"config.json is not UTF-8 text ({e.reason} at byte {e.start})") from None
    if len(text) > max_bytes:
        raise ValueError(f"config.json is {len(text):,} characters; the limit is {max_bytes:,}")
    if not text.strip():
        raise ValueError("config.json is empty")
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise ValueError("config.json is nested too deeply") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"config.json is not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})") from None
    except ValueError as e:  # an integer of more than 4,300 digits, or NaN (_reject_constant)
        msg = str(e)
        if msg.startswith("config.json"):
            raise
        raise ValueError(f"config.json has a number that cannot be read ({msg.split(':')[0]})") from None
    if not isinstance(data, dict):
        raise ValueError(f"config.json must be a JSON object, got {type(data).__name__}")
    if _depth(data) > _MAX_DEPTH:
        raise ValueError(f"config.json is nested more than {_MAX_DEPTH} levels deep")
    return data


def check_integers(config: Any, family: str = "") -> None:
    """Every integer in ``config`` (nested objects and list elements included) within +-MAX_FIELD_INT: a
    ValueError naming the first one outside, by its path (``vision_config.merge_kernel_size[0]``)."""
    stack: list[tuple[str, Any]] = [("", config)]
    while stack:
        path, v = stack.pop()
        if isinstance(v, Mapping):
            stack += [(f"{path}.{k}" if path else str(k), x) for k, x in reversed(list(v.items()))]
        elif isinstance(v, list):
            stack += [(f"{path}[{i}]", x) for i, x in reversed(list(enumerate(v)))]
        elif isinstance(v, int) and not isinstance(v, bool) and not -MAX_FIELD_INT <= v <= MAX_FIELD_INT:
            where = f"config.json ({family})" if family else "config.json"
            raise ValueError(
                f"{where}: field '{path if len(path) <= 120 else path[:119] + '…'}' must be between "
                f"-{MAX_FIELD_INT:,} and {MAX_FIELD_INT:,} (the bound on every integer in a config.json), got "
                f"{_int_text(v)}"
            )


def _int_text(v: int) -> str:
    """An integer for a message: written out up to 20 digits, else its size ("a 301-digit integer")."""
    digits = len(str(abs(v)))
    return f"{v:,}" if digits <= 20 else f"a {digits:,}-digit {'negative ' if v < 0 else ''}integer"


def _reject_constant(name: str) -> Any:
    # Infinity appears in published configs in fields the planner does not read (Nemotron-H's
    # time_step_limit [0.0, Infinity]); every number that is read must be finite (_Fields checks). NaN
    # never has a meaning in a config.
    if name in ("Infinity", "-Infinity"):
        return float(name.replace("Infinity", "inf"))
    raise ValueError(f"config.json contains {name}, which is not a valid number here")


def _depth(obj: Any, level: int = 0) -> int:
    if level > _MAX_DEPTH:
        return level
    if isinstance(obj, dict):
        return max((_depth(v, level + 1) for v in obj.values()), default=level + 1)
    if isinstance(obj, list):
        return max((_depth(v, level + 1) for v in obj), default=level + 1)
    return level


class Fields:
    """Typed access to config fields with messages that name the field and the family."""

    def __init__(self, cfg: Mapping[str, Any], family: str):
        self.cfg = cfg
        self.family = family

    def where(self, key: str) -> str:
        return f"config.json ({self.family}): field '{key}'"

    def section(self, key: str, *, family: str | None = None, or_self: bool = False) -> Fields:
        """A nested object (``text_config``, ``vision_config``) as Fields; with ``or_self`` the config
        itself when the key is absent (a text-only checkpoint)."""
        v = self.cfg.get(key, self.cfg if or_self else None)
        if not isinstance(v, Mapping):
            raise ValueError(f"{self.where(key)} must be an object")
        return Fields(v, family or self.family)

    def error(self, message: str) -> ValueError:
        return ValueError(f"config.json ({self.family}): {message}")

    def has(self, key: str) -> bool:
        return self.cfg.get(key) is not None

    def int(self, *keys: str, default: Any = ..., minimum: int = 1, maximum: int | None = None, why: str = "") -> int:
        """The first of ``keys`` present: an integer in ``minimum..maximum`` (``why``: the reason for the
        maximum, said in the message); ``default`` when none is present, else ValueError."""
        top = MAX_FIELD_INT if maximum is None else min(maximum, MAX_FIELD_INT)
        reason = f" ({why})" if why and maximum is not None and maximum < MAX_FIELD_INT else ""
        for key in keys:
            if key in self.cfg and self.cfg[key] is not None:
                v = self.cfg[key]
                if (
                    isinstance(v, bool)
                    or not isinstance(v, (int, float))
                    or (isinstance(v, float) and (not math.isfinite(v) or v != int(v)))
                ):
                    raise ValueError(f"{self.where(key)} must be an integer, got {_short(v)}")
                v = int(v)
                if v < minimum:
                    raise ValueError(f"{self.where(key)} must be >= {minimum:,}, got {_int_text(v)}")
                if v > top:
                    raise ValueError(f"{self.where(key)} must be <= {top:,}{reason}, got {_int_text(v)}")
                return v
        if default is ...:
            names = "' or '".join(keys)
            raise ValueError(
                f"config.json ({self.family}): missing field '{names}' (an integer, {minimum:,} to {top:,}{reason})"
            )
        return default

    def experts(self, *keys: str, default: Any = ..., minimum: int = 1) -> int:
        """A routed-expert count: at most MAX_ROUTED_EXPERTS (the Balance page's chart)."""
        return self.int(*keys, default=default, minimum=minimum, maximum=MAX_ROUTED_EXPERTS, why=EXPERTS_WHY)

    def bool(self, key: str, default: bool = False) -> bool:
        v = self.cfg.get(key, default)
        if v is None:
            return default
        if not isinstance(v, bool):
            raise ValueError(f"{self.where(key)} must be true or false, got {_short(v)}")
        return v

    def str(self, key: str, default: str | None = None) -> str | None:
        v = self.cfg.get(key, default)
        if v is not None and not isinstance(v, str):
            raise ValueError(f"{self.where(key)} must be a string, got {_short(v)}")
        return v

    def int_list(
        self,
        key: str,
        default: list[int] | None = None,
        *,
        minimum: int = -MAX_FIELD_INT,
        maximum: int = MAX_FIELD_INT,
        why: str = "",
    ) -> list[int]:
        """A list of integers, each in ``minimum..maximum`` (``why``: the reason for a maximum tighter than
        MAX_FIELD_INT, said in the message, which names the element: ``'merge_kernel_size[0]'``)."""
        v = self.cfg.get(key)
        if v is None:
            return list(default or [])
        if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            raise ValueError(f"{self.where(key)} must be a list of integers")
        top = min(maximum, MAX_FIELD_INT)
        reason = f" ({why})" if why and maximum < MAX_FIELD_INT else ""
        for i, x in enumerate(v):
            if not max(minimum, -MAX_FIELD_INT) <= x <= top:
                where = self.where(f"{key}[{i}]")
                raise ValueError(f"{where} must be {minimum:,} to {top:,}{reason}, got {_int_text(x)}")
        return v

    def first_int(self, key: str, default: Any = ..., **bounds: Any) -> int:
        """Some families (Hunyuan) give per-layer lists for a value that is uniform in practice: an integer,
        or a non-empty list of one integer repeated (``bounds``: ``maximum``, ``why`` as for :meth:`int`)."""
        v = self.cfg.get(key)
        if isinstance(v, list):
            if not v or any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in v):
                raise ValueError(f"{self.where(key)} must list integers (one per layer), got {_short(v)}")
            if len(set(v)) > 1:
                raise ValueError(f"{self.where(key)} varies by layer ({_short(sorted(set(v)))}); not supported")
            return Fields({key: v[0]}, self.family).int(key, **bounds)
        return self.int(key, default=default, **bounds)


def _short(v: Any, limit: int = 80) -> str:
    """repr of a value read from a config, cut to ``limit`` characters (a message never carries a megabyte)."""
    r = repr(v)
    return r if len(r) <= limit else r[: limit - 1] + "…"
