"""The Compare page's saved-scenario actions (Streamlit glue for :mod:`core.store`): what this session has seen
of saved scenarios, and the callbacks of Open, Rename, Delete and Save, each addressing the version the
session saw (a save over a version someone else saved since, or over a name never opened here, becomes a
conflict shown beside this session's scenario). Messages go to ``st.session_state`` for the next draw."""

from __future__ import annotations

import streamlit as st

from core.hf import model_from_config_text
from core.store import ScenarioChangedError, ScenarioExistsError, ScenarioGoneError, normalize_name
from ui.scenario import imported_models, update_scenario

__all__ = [
    "cancel_conflict",
    "delete_ref",
    "differences",
    "forget",
    "note",
    "open_ref",
    "opened",
    "refused",
    "remember",
    "rename_ref",
    "replace_theirs",
    "save_new",
    "save_typed",
    "show_conflict",
]


def note(kind: str, text: str, where: str = "store_note") -> None:
    st.session_state[where] = (kind, text)


# What this session has seen of saved scenarios: the ref (id, version, name) it last opened or saved under
# each name (Save + Overwrite goes through it), and the ref the manage buttons were last drawn with.
def opened() -> dict:
    return st.session_state.setdefault("store_opened", {})


def remember(ref) -> None:
    """This session has now opened or saved ``ref``: later saves over its name go through this version."""
    held = opened()
    for n in [n for n, r in held.items() if r.id == ref.id]:
        del held[n]
    held[ref.name] = ref
    seen = st.session_state.get("manage_seen")
    if seen is not None and seen.id == ref.id:
        st.session_state["manage_seen"] = ref  # this session's own change is no news to it


def forget(ref) -> None:
    """``ref``'s scenario is gone: nothing to save over, nothing selected."""
    held = opened()
    for n in [n for n, r in held.items() if r.id == ref.id]:
        del held[n]
    if st.session_state.get("manage_pick") == ref.id:
        st.session_state["manage_pick"] = None  # so a second click cannot reach the next row
    st.session_state.pop("manage_seen", None)
    conflict = st.session_state.get("save_conflict")
    if conflict and conflict["theirs"].id == ref.id:
        del st.session_state["save_conflict"]


def refused(err: ValueError, ref) -> None:
    """After a refused operation on ``ref``: the message has told the user what changed, so the next draw
    binds what is stored now, without a second notice."""
    if isinstance(err, ScenarioGoneError):
        forget(ref)
    elif isinstance(err, ScenarioChangedError):
        st.session_state.pop("manage_seen", None)


def open_ref(store, ref) -> None:
    try:
        item = store.get_ref(ref)
        if item.model_config_json:
            spec, norm = model_from_config_text(item.model_config_json)
            imported_models()[spec.id] = (spec, norm)
        update_scenario(**item.scenario.model_dump())
    except ValueError as err:
        refused(err, ref)
        note("error", f"Not opened: {err}")
    else:
        remember(item.ref)
        conflict = st.session_state.get("save_conflict")
        if conflict and conflict["theirs"].id == ref.id:
            del st.session_state["save_conflict"]
        note("success", f"Opened “{ref.name}” (version {item.version})")


def rename_ref(store, ref) -> None:
    try:
        new = store.rename_ref(ref, st.session_state.get("rename_to", ""))
    except ValueError as err:
        refused(err, ref)
        note("error", f"Not renamed: {err}")
    else:
        remember(new)
        note("success", f"Renamed “{ref.name}” to “{new.name}”")


def delete_ref(store, ref) -> None:
    try:
        store.delete_ref(ref)
    except ValueError as err:
        refused(err, ref)
        note("error", f"Not deleted: {err}")
    else:
        forget(ref)
        note("success", f"Deleted “{ref.name}”")


def show_conflict(theirs, why: str) -> None:
    """Show ``theirs`` (a SavedScenario) beside this session's scenario, with the ways on."""
    st.session_state["save_conflict"] = {"theirs": theirs, "why": why}


def save_typed(store, typed: str, scen, cfg, overwrite: bool) -> tuple[str, str]:
    """The Save button: a new name, or (Overwrite) over the version this session last opened or saved
    under that name. Never over a version this session has not seen: that becomes a conflict to resolve."""
    st.session_state.pop("save_conflict", None)
    try:
        name = normalize_name(typed)
    except ValueError as err:
        return "error", f"Not saved: {err}"
    ref = opened().get(name) if overwrite else None
    try:
        if ref is not None:
            done = store.save_ref(ref, scen, model_config_json=cfg)
        else:
            done = store.save(name, scen, model_config_json=cfg)  # a new name: nothing to lose
    except ScenarioExistsError as err:
        if not overwrite:
            return "error", f"Not saved: {err}"
        try:
            theirs = store.get(name)
        except ValueError:  # a look-alike of a saved name, not that name: overwrite never replaces another
            return "error", f"Not saved: {err}"
        show_conflict(theirs, "this session has not opened it, so saving over it could discard someone's work")
        return "error", (
            f"Not saved: “{name}” is saved already and this session has not opened it: compare below, then open "
            "theirs, save yours under another name, or replace theirs"
        )
    except ScenarioChangedError as err:
        refused(err, ref)
        try:
            theirs = store.get_ref(err.current) if err.current else None
        except ValueError:
            theirs = None
        if theirs is not None:
            show_conflict(theirs, "someone else saved it after you opened it")
        return "error", f"Not saved: {err}"
    except ScenarioGoneError as err:
        forget(ref)
        return "error", f"Not saved: {err}"
    except ValueError as err:
        return "error", f"Not saved: {err}"
    remember(done.ref)
    return "success", f"Saved “{done.name}”."


def replace_theirs(store, ref, scen, cfg) -> None:
    """The conflict's "Replace theirs": over the version shown, and only that one."""
    try:
        done = store.save_ref(ref, scen, model_config_json=cfg)
    except ScenarioChangedError as err:
        try:
            show_conflict(store.get_ref(err.current), "someone else saved it again while you compared")
        except ValueError:
            st.session_state.pop("save_conflict", None)
        note("error", f"Not saved: {err}", "save_note")
    except ValueError as err:
        if isinstance(err, ScenarioGoneError):
            forget(ref)
        note("error", f"Not saved: {err}", "save_note")
    else:
        st.session_state.pop("save_conflict", None)
        remember(done.ref)
        note("success", f"Saved “{done.name}” over version {ref.version} (now version {done.version}).", "save_note")


def cancel_conflict() -> None:
    st.session_state.pop("save_conflict", None)


def save_new(store, scen, cfg) -> None:
    """The conflict's "Save yours as a new scenario"."""
    try:
        done = store.save(st.session_state.get("conflict_new_name", ""), scen, model_config_json=cfg)
    except ValueError as err:
        note("error", f"Not saved: {err}", "save_note")
    else:
        st.session_state.pop("save_conflict", None)
        remember(done.ref)
        note("success", f"Saved “{done.name}”.", "save_note")


# field paths of a Scenario, as the sidebar calls them
_LABELS = {
    "model_id": "model",
    "gpu_id": "GPU",
    "num_nodes": "nodes",
    "gpus_per_node": "GPUs per node",
    "serving_stack": "serving stack",
    "workload.batch": "concurrent sequences (batch)",
    "workload.input_len": "input tokens / sequence (ISL)",
    "workload.output_len": "output tokens / sequence (OSL)",
    "workload.prefix_reuse": "prefix-cache hits",
}


def _shown(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, dict):
        return ", ".join(f"{k}={_shown(v)}" for k, v in value.items() if v is not None) or "—"
    return str(value)


def differences(theirs: dict, mine: dict, prefix: str = "") -> list[dict]:
    """The fields of two ``Scenario.model_dump()`` that differ: one row each (field, theirs, yours)."""
    rows = []
    for k in dict.fromkeys([*theirs, *mine]):
        a, b, path = theirs.get(k), mine.get(k), f"{prefix}{k}"
        if isinstance(a, dict) and isinstance(b, dict):
            rows += differences(a, b, f"{path}.")
        elif a != b:
            rows.append({"field": _LABELS.get(path, path), "saved": _shown(a), "yours": _shown(b)})
    return rows
