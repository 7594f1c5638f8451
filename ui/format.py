"""Number formatting with units, shared by every page (display only, no model arithmetic)."""

from __future__ import annotations

__all__ = ["bytes_h", "params_h"]


def params_h(n: float) -> str:
    """Parameters with a B/M suffix: 671.0B, 871.9M."""
    if n >= 1e9:
        return f"{n / 1e9:,.1f}B" if n < 1e11 else f"{n / 1e9:,.0f}B"
    if n >= 1e6:
        return f"{n / 1e6:,.1f}M"
    return f"{n:,.0f}"


def bytes_h(n: float) -> str:
    """Decimal bytes (GB = 1e9 B, as vendors quote HBM): 1.15 KB, 70.3 KB, 685.2 GB."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:,.2f} {unit}" if n / scale < 100 else f"{n / scale:,.1f} {unit}"
    return f"{n:,.0f} B"
