"""A registry of kinds found by import: every module of a package is imported, and each subclass of ``base`` (at
any depth) with a ``kind: Literal["..."]`` pydantic field is one kind. The mixers and the model extras
(:mod:`core.model.mixers`, :mod:`core.model.extras`) are built this way, so a new kind is one new file."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from typing import Literal, get_args, get_origin

__all__: list[str] = []  # for the registries of core.model only (not a fuzzed entry: it imports packages)


def discover_kinds(package: str, path: Iterable[str], base: type, what: str) -> dict[str, type]:
    """``{kind: class}`` of ``base``'s subclasses after importing every module of ``package`` (at ``path``), sorted
    by kind; two classes claiming one kind raise RuntimeError naming both (``what``: "mixer", "extra")."""
    for info in pkgutil.iter_modules(path):
        importlib.import_module(f"{package}.{info.name}")
    kinds: dict[str, type] = {}
    todo = list(base.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        field = cls.model_fields.get("kind")
        if field is not None and get_origin(field.annotation) is Literal:
            (name,) = get_args(field.annotation)
            if name in kinds and kinds[name] is not cls:
                raise RuntimeError(f"two {what} classes claim kind {name!r}: {kinds[name].__name__}, {cls.__name__}")
            kinds[name] = cls
    return dict(sorted(kinds.items()))
