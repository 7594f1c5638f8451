"""What every pydantic model of the domain shares: frozen, no unknown fields, clear messages.

A bad value raises ``pydantic.ValidationError`` (a ``ValueError``) naming the field and the allowed range;
:func:`describe_validation_error` turns it into one line per problem for the pages, and :func:`bounds` reads a
field's declared range so a widget or a URL's help states the same limits as the model.
"""

from __future__ import annotations

from typing import Annotated, get_args

import annotated_types
from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = [
    "FROZEN",
    "MIN_DIVISOR",
    "NonNegInt",
    "PosInt",
    "bounds",
    "bounds_text",
    "describe_validation_error",
    "validate_entries",
]

FROZEN = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)

PosInt = Annotated[int, Field(gt=0)]
NonNegInt = Annotated[int, Field(ge=0)]

# The formulas divide by bandwidths, capacities, peaks and efficiencies: a positive value so small that
# the division overflows (5e-324) is refused like zero. Checked after the field's own bounds, so 0 or a
# negative value still gets pydantic's "greater than 0" message.
MIN_DIVISOR = 0.001


def not_vanishing(v: float | None, info) -> float | None:
    """A field validator: a value below ``MIN_DIVISOR`` is refused like zero."""
    if v is not None and v < MIN_DIVISOR:
        raise ValueError(f"{info.field_name} must be at least {MIN_DIVISOR:g}, got {v!r}")
    return v


def describe_validation_error(err: ValidationError | ValueError) -> str:
    """One line per problem, "field: message", for display in the app (never a traceback)."""
    if isinstance(err, ValidationError):
        lines = []
        for e in err.errors():
            loc = ".".join(str(p) for p in e.get("loc", ())) or "value"
            msg = e.get("msg", "invalid")
            msg = msg.removeprefix("Value error, ")
            lines.append(f"{loc}: {msg}")
        return "; ".join(lines)
    return str(err)


def _constraints(metadata, annotation) -> list:
    """The field's own constraints, and those of an ``Annotated`` inside an optional type (``X | None``)."""
    out = list(metadata)
    for arg in get_args(annotation):
        for extra in getattr(arg, "__metadata__", ()):
            out += list(getattr(extra, "metadata", [extra]))
    return out


def bounds(model: type[BaseModel], field: str) -> tuple[float | None, float | None]:
    """``(lowest, highest)`` value a model's field allows, from its declaration (``ge`` / ``gt`` / ``le`` /
    ``lt``; None where unbounded): the sidebar's widgets and the URL help read their limits from here."""
    fields = getattr(model, "model_fields", None)
    if not isinstance(fields, dict) or field not in fields:
        raise ValueError(f"{getattr(model, '__name__', model)!r} has no field {field!r}")
    info = fields[field]
    lo = hi = None
    for m in _constraints(info.metadata, info.annotation):
        if isinstance(m, annotated_types.Ge | annotated_types.Gt):
            lo = m.ge if isinstance(m, annotated_types.Ge) else m.gt
        elif isinstance(m, annotated_types.Le | annotated_types.Lt):
            hi = m.le if isinstance(m, annotated_types.Le) else m.lt
    return lo, hi


def _num(v: float) -> str:
    return f"{int(v):,}" if float(v).is_integer() else f"{v:g}"


def bounds_text(model: type[BaseModel], field: str) -> str:
    """A field's allowed range in words, from its declaration: "1-4,096", "above 0 up to 1", "at least 0"."""
    lo, hi = bounds(model, field)
    fields = model.model_fields
    open_lo = any(
        isinstance(m, annotated_types.Gt) for m in _constraints(fields[field].metadata, fields[field].annotation)
    )
    if lo is not None and hi is not None:
        return f"above {_num(lo)} up to {_num(hi)}" if open_lo else f"{_num(lo)}-{_num(hi)}"
    if lo is not None:
        return f"above {_num(lo)}" if open_lo else f"at least {_num(lo)}"
    return f"up to {_num(hi)}" if hi is not None else "any value"


def validate_entries(entries: list, cls: type[BaseModel], name: str, what: str) -> tuple:
    """Each entry of a catalog file's list as a ``cls`` (pydantic), their ids unique: a bad entry raises
    ValueError naming the file, the ``what`` (profile, point, ...), its id or position, and the field."""
    from collections.abc import Mapping

    if not (isinstance(cls, type) and issubclass(cls, BaseModel) and "id" in cls.model_fields):
        raise ValueError(f"cls must be a pydantic model class with an id field, got {cls!r}"[:200])
    if not isinstance(entries, list):
        raise TypeError(f"entries must be a list, got {type(entries).__name__}")
    out = []
    for i, entry in enumerate(entries):
        label = entry.get("id", f"#{i}") if isinstance(entry, Mapping) else f"#{i}"
        try:
            out.append(cls.model_validate(entry))
        except ValidationError as e:
            raise ValueError(f"{name}: {what} {str(label)[:60]!r}: {describe_validation_error(e)}") from None
    ids = [x.id for x in out]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise ValueError(f"{name}: {what} id(s) {', '.join(twice)} appear more than once")
    return tuple(out)
