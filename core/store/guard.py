"""A scenario store seen through a session's role (:mod:`core.store.auth` decides the role): reads need "read" or
"edit", writes need "edit"; anything else raises :class:`NotAllowedError` and reaches no store. The Compare page
disables the same buttons; this is the server-side half, so a crafted request cannot do more than the buttons."""

from __future__ import annotations

import builtins

from core.store.auth import Identity
from core.store.types import SavedScenario, ScenarioRef, ScenarioStore, StoreListing

__all__ = ["GuardedStore", "NotAllowedError"]


class NotAllowedError(ValueError):
    """The session's role does not allow that operation."""


class GuardedStore:
    """A :class:`~core.store.types.ScenarioStore` seen through a session's role: reads need "read" or "edit",
    writes need "edit"; anything else raises :class:`NotAllowedError` and reaches no store."""

    def __init__(self, store: ScenarioStore, identity: Identity) -> None:
        self.store, self.identity = store, identity

    def __repr__(self) -> str:
        return f"GuardedStore({self.store!r}, role={self.identity.role!r})"

    def _need(self, edit: bool, action: str) -> None:
        ok = self.identity.can_edit if edit else self.identity.can_read
        if not ok:
            who = self.identity.user or "this session"
            has = f"{self.identity.role} access only" if self.identity.role else "no access to saved scenarios"
            raise NotAllowedError(f"{who} has {has}: {action} needs the {'edit' if edit else 'read'} role")

    def get(self, name: str) -> SavedScenario:
        self._need(False, "opening")
        return self.store.get(name)

    def list(self) -> builtins.list[SavedScenario]:
        self._need(False, "listing")
        return self.store.list()

    def scan(self) -> StoreListing:
        self._need(False, "listing")
        return self.store.scan()

    def get_ref(self, ref: ScenarioRef) -> SavedScenario:
        self._need(False, "opening")
        return self.store.get_ref(ref)

    def save(
        self, name: str, scenario, *, model_config_json: str | None = None, overwrite: bool = False
    ) -> SavedScenario:
        self._need(True, "saving")
        return self.store.save(name, scenario, model_config_json=model_config_json, overwrite=overwrite)

    def save_ref(self, ref: ScenarioRef, scenario, *, model_config_json: str | None = None) -> SavedScenario:
        self._need(True, "saving")
        return self.store.save_ref(ref, scenario, model_config_json=model_config_json)

    def rename(self, old: str, new: str) -> None:
        self._need(True, "renaming")
        self.store.rename(old, new)

    def delete(self, name: str) -> None:
        self._need(True, "deleting")
        self.store.delete(name)

    def rename_ref(self, ref: ScenarioRef, new: str) -> ScenarioRef:
        self._need(True, "renaming")
        return self.store.rename_ref(ref, new)

    def delete_ref(self, ref: ScenarioRef) -> None:
        self._need(True, "deleting")
        self.store.delete_ref(ref)
