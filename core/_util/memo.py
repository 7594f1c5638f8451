"""Memoising functions of a model without hashing it: a ModelSpec is a large frozen pydantic object whose
hash walks every field (a few microseconds), and the layout search asks for its stage structure tens of
thousands of times. The cache is keyed by the object's identity and holds the object, so an id is never
reused while its entry lives; it is bounded (least recently used out)."""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable
from typing import TypeVar

__all__ = ["by_identity"]

R = TypeVar("R")


def by_identity(maxsize: int = 4096) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Cache ``fn(obj, *args)`` on ``(id(obj), *args)``; ``args`` must be hashable."""

    def wrap(fn: Callable[..., R]) -> Callable[..., R]:
        cache: OrderedDict[tuple, tuple[object, R]] = OrderedDict()

        @functools.wraps(fn)
        def call(obj, *args):
            key = (id(obj), *args)
            hit = cache.get(key)
            if hit is not None and hit[0] is obj:
                cache.move_to_end(key)
                return hit[1]
            value = fn(obj, *args)
            cache[key] = (obj, value)
            if len(cache) > maxsize:
                cache.popitem(last=False)
            return value

        call.cache_clear = cache.clear  # type: ignore[attr-defined]
        return call

    return wrap
