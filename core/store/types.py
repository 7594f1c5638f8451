"""Saved scenarios: the interface every backend implements, its records and its errors.

A scenario has a stable ``id`` (kept across renames) and a ``version`` (+1 on every rename or save over
it); a session addresses what it read by a :class:`ScenarioRef`, and every change it makes to a saved
scenario (rename, delete, save over it) carries that reference, so a change made by someone else since is
never overwritten silently. Every error is a ``ValueError`` with a
message a page can show as it is. See :mod:`core.store.sql` for the semantics of each operation.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from core.deployment.specs import Scenario

__all__ = [
    "BadRow",
    "SavedScenario",
    "ScenarioChangedError",
    "ScenarioExistsError",
    "ScenarioGoneError",
    "ScenarioNotFoundError",
    "ScenarioRef",
    "ScenarioStore",
    "StoreBusyError",
    "StoreListing",
]


class ScenarioExistsError(ValueError):
    """Saving (or renaming onto) a name that is taken, or that looks the same as a saved one."""


class ScenarioNotFoundError(ValueError, KeyError):
    """No scenario of that name. A ValueError (like every other store error) that is also a
    KeyError, for callers that treat the store as a mapping."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "scenario not found"


class ScenarioGoneError(ScenarioNotFoundError):
    """The scenario a session read has been deleted since; nothing was done."""


class ScenarioChangedError(ValueError):
    """The scenario a session read has been renamed or saved over since; nothing was done. ``current`` is
    the reference of what is stored now (when known), for a page to show both versions."""

    def __init__(self, message: str, current: ScenarioRef | None = None) -> None:
        super().__init__(message)
        self.current = current


class StoreBusyError(ValueError):
    """Another writer held the store for longer than the busy timeout; nothing was done: try again."""


@dataclass(frozen=True)
class ScenarioRef:
    """What a session read: the scenario's stable id, the version it saw and the name it showed."""

    id: str
    version: int
    name: str


@dataclass(frozen=True)
class SavedScenario:
    """One saved scenario. Timestamps are ISO 8601 in UTC, e.g. ``2025-01-31T12:00:00.123456+00:00``."""

    name: str
    scenario: Scenario
    model_config_json: str | None
    created_at: str
    updated_at: str
    id: str = ""
    version: int = 0

    @property
    def ref(self) -> ScenarioRef:
        return ScenarioRef(self.id, self.version, self.name)


@dataclass(frozen=True)
class BadRow:
    """A stored row that cannot be read as a scenario (JSON that does not parse, fields out of range),
    with the reason; it can still be deleted through :attr:`ref`."""

    name: str
    reason: str
    id: str
    version: int

    @property
    def ref(self) -> ScenarioRef:
        return ScenarioRef(self.id, self.version, self.name)


@dataclass(frozen=True)
class StoreListing:
    """Every stored row: the readable ones (newest first) and the bad ones."""

    saved: list[SavedScenario]
    bad: list[BadRow]


@runtime_checkable
class ScenarioStore(Protocol):
    """Where named scenarios live. Names are normalised (:func:`core.store.names.normalize_name`)."""

    def save(
        self, name: str, scenario: Scenario, *, model_config_json: str | None = None, overwrite: bool = False
    ) -> SavedScenario:
        """Store ``scenario`` under ``name``; ScenarioExistsError if the name (or a look-alike) is taken and
        not ``overwrite`` (overwrite replaces that very name, never a look-alike)."""
        ...

    def get(self, name: str) -> SavedScenario:
        """The scenario saved as ``name``; ScenarioNotFoundError (a ValueError) if there is none."""
        ...

    def list(self) -> builtins.list[SavedScenario]:
        """Every saved scenario, most recently saved first; ValueError naming the first corrupt row."""
        ...

    def scan(self) -> StoreListing:
        """Every row: the readable scenarios, newest first, and the bad rows with their reasons."""
        ...

    def rename(self, old: str, new: str) -> None:
        """Rename ``old`` to ``new``; ValueError if ``old`` is missing or ``new`` is taken."""
        ...

    def delete(self, name: str) -> None:
        """Remove ``name``; ScenarioNotFoundError (a ValueError) if there is none."""
        ...

    def get_ref(self, ref: ScenarioRef) -> SavedScenario:
        """The scenario ``ref`` names, if still at that version (else ScenarioGoneError / ScenarioChangedError)."""
        ...

    def rename_ref(self, ref: ScenarioRef, new: str) -> ScenarioRef:
        """Rename what ``ref`` names if unchanged since; the new reference."""
        ...

    def delete_ref(self, ref: ScenarioRef) -> None:
        """Delete what ``ref`` names if unchanged since."""
        ...

    def save_ref(self, ref: ScenarioRef, scenario: Scenario, *, model_config_json: str | None = None) -> SavedScenario:
        """Save ``scenario`` over what ``ref`` names, if unchanged since (ScenarioGoneError /
        ScenarioChangedError otherwise); the saved record, at ``ref.version + 1``."""
        ...
