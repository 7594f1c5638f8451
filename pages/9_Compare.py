"""Compare & saved: save the scenario under a name, reopen, rename or delete it, compare two to four.

Saved scenarios are shared by everyone on the server. Each operation addresses the scenario this session
last saw (its id and version, bound to the button when the page was drawn): one that someone else has
deleted or changed since is refused with a message, never applied to another row. Saving over a name
(Overwrite) goes through the version this session last opened or saved under that name; a save over a
version someone else saved since, or over a scenario this session never opened, is refused and shows both
(theirs as saved, yours) with the choices: open theirs, save yours under another name, or replace theirs
(bound to the version shown). When the selected scenario is deleted elsewhere, nothing stays selected;
when it is renamed or saved again elsewhere, the page says so and the next click made on the old version
is refused. Rows that cannot be used are listed apart, with the reason, and can be deleted. Readers
(PLANNER_AUTH) open and compare only.
"""

import pandas as pd
import streamlit as st

from core.hf import model_from_config_text
from core.report import compare_row
from core.store import (
    StoreBusyError,
    open_store,
)
from ui import saved as actions
from ui.auth import access_note, guarded, identity, sentence, sign_in_controls
from ui.format import md_escape
from ui.scenario import catalog, current_model, imported_models, page

scenario, cat, *_ = page("Compare & saved", "🗂️")
st.title("Compare & saved scenarios")

who = identity()
if not who.can_read:
    st.error(sentence(who.reason))
    sign_in_controls(who)
    st.stop()
st.caption(access_note(who))
sign_in_controls(who)
read_only = not who.can_edit
why_not = "Needs the edit role" if read_only else None


@st.cache_resource(show_spinner=False)
def _store():
    """One store per server process (PLANNER_DB: a path, sqlite:///path or postgresql://...)."""
    return open_store()


try:
    store = guarded(_store(), who)
    listing = store.scan()
except StoreBusyError as err:
    st.error(sentence(f"Saved scenarios cannot be shown right now: {err}"))
    st.button("Try again", key="retry_store")
    st.stop()
except (ValueError, OSError) as err:
    st.error(
        f"The scenario store is not available: {md_escape(err)}. Check PLANNER_DB (a writable file path, "
        "sqlite:///path or postgresql://user@host:5432/database)."
    )
    st.stop()


@st.cache_data(show_spinner=False, max_entries=256)
def _unusable(model_id: str, gpu_id: str, cfg_json: str | None) -> str | None:
    """Why a readable saved scenario cannot be opened or compared any more, or None."""
    try:
        if cfg_json:
            model_from_config_text(cfg_json)
        else:
            catalog().model(model_id)
    except ValueError as e:
        what = "its imported model config no longer imports" if cfg_json else "its model is not in the catalog"
        return f"{what}: {e}"
    try:
        catalog().gpu(gpu_id)
    except ValueError as e:
        return f"its GPU is not in the catalog: {e}"
    return None


# ---- save
st.subheader("Save the current scenario")
c = st.columns([3, 1, 1])
name = c[0].text_input(
    "Name", key="save_name", max_chars=100, placeholder="e.g. baseline-8xH200", disabled=read_only, help=why_not
)
overwrite = c[1].checkbox(
    "Overwrite",
    key="save_overwrite",
    disabled=read_only,
    help="Save over the scenario of that name, as you last opened or saved it (refused if someone else has "
    "saved it since, or if you have not opened it)",
)
mine_cfg = imported_models().get(current_model(scenario).id, (None, None))[1]
if c[2].button("Save", type="primary", key="save_button", disabled=read_only, help=why_not):
    kind, text = actions.save_typed(store, name, scenario, mine_cfg, overwrite)
    if kind == "success":
        st.success(md_escape(text))
        try:
            listing = store.scan()
        except ValueError:  # the store went away between the save and the listing: show the one read before
            pass
    else:
        st.error(sentence(text))
if note := st.session_state.pop("save_note", None):
    (st.error if note[0] == "error" else st.success)(sentence(note[1]))

conflict = st.session_state.get("save_conflict")
if conflict:
    theirs = conflict["theirs"]
    with st.container(border=True, key="save_conflict_box"):
        stamp = theirs.updated_at[:19].replace("T", " ")
        st.markdown(
            f"**“{md_escape(theirs.name)}” as saved (version {theirs.version}{f', {stamp} UTC' if stamp else ''}) "
            "and yours** — not saved: "
            f"{md_escape(conflict['why'])}. Nothing is lost until you choose."
        )
        diff = actions.differences(theirs.scenario.model_dump(mode="json"), scenario.model_dump(mode="json"))
        if (theirs.model_config_json or None) != (mine_cfg or None):
            diff.append({"field": "imported model config", "saved": "differs", "yours": "differs"})
        if diff:
            st.dataframe(pd.DataFrame(diff), hide_index=True, width="stretch")
        else:
            st.caption("The saved scenario has the same settings as yours.")
        k = st.columns([1, 1, 2, 1, 1])
        k[0].button("Open theirs", key="conflict_open", on_click=actions.open_ref, args=(store, theirs.ref))
        k[1].button(
            f"Replace theirs (version {theirs.version}) with yours",
            key="conflict_replace",
            on_click=actions.replace_theirs,
            args=(store, theirs.ref, scenario, mine_cfg),
            disabled=read_only,
            help="Saves over the version shown here only; refused if it changes again",
        )
        if "conflict_new_name" not in st.session_state:
            st.session_state["conflict_new_name"] = f"{theirs.name[:93]} (mine)"
        k[2].text_input("Save yours as", key="conflict_new_name", max_chars=100, disabled=read_only)
        k[3].button(
            "Save as new",
            key="conflict_save_new",
            on_click=actions.save_new,
            args=(store, scenario, mine_cfg),
            disabled=read_only,
        )
        k[4].button("Cancel", key="conflict_cancel", on_click=actions.cancel_conflict)
else:
    st.session_state.pop("conflict_new_name", None)

# ---- saved list
kind, text = st.session_state.pop("store_note", (None, None))
problems = {
    s.id: r for s in listing.saved if (r := _unusable(s.scenario.model_id, s.scenario.gpu_id, s.model_config_json))
}
saved = [s for s in listing.saved if s.id not in problems]
bad = [(b.name, b.reason, b.ref) for b in listing.bad] + [
    (s.name, problems[s.id], s.ref) for s in listing.saved if s.id in problems
]

st.subheader(f"Saved scenarios ({len(saved)})")
if kind:
    (st.error if kind == "error" else st.success)(sentence(text))
if bad:
    st.warning(
        f"{len(bad)} saved scenario{'s' if len(bad) != 1 else ''} cannot be used (left out below; delete to clear):\n\n"
        + "\n".join(f"- “{md_escape(n)}”: {md_escape(r)}" for n, r, _ in bad)
    )
    cols = st.columns(min(len(bad), 4))
    for i, (n, _, ref) in enumerate(bad):
        cols[i % len(cols)].button(
            f"Delete “{md_escape(n)}”",
            key=f"delete_bad_{ref.id or i}",
            on_click=actions.delete_ref,
            args=(store, ref),
            disabled=read_only or not ref.id,
            help=why_not,
        )
if not saved:
    st.info("Nothing saved yet. Saved scenarios survive a server restart and are shared by everyone using this server.")
else:
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "name": s.name,
                    "model": s.scenario.model_id,
                    "GPUs": f"{s.scenario.total_gpus} × {s.scenario.gpu_id}",
                    "precision": s.scenario.precision.label,
                    "updated (UTC)": s.updated_at[:19].replace("T", " "),
                }
                for s in saved
            ]
        ),
        hide_index=True,
        width="stretch",
    )
    by_id = {s.id: s for s in saved}
    held = st.session_state.get("manage_pick")
    if held is not None and held not in by_id:  # the selection vanished since the last run
        gone = st.session_state.get("manage_names", {}).get(held)
        if gone and held not in {ref.id for *_, ref in bad}:
            st.warning(
                f"“{md_escape(gone)}”, which you had selected, is no longer saved: someone else deleted it. "
                "Nothing is selected now: pick a saved scenario to open, rename or delete it."
            )
        st.session_state["manage_pick"] = None  # nothing selected: a retry click cannot reach another row
        st.session_state.pop("manage_seen", None)
    st.session_state["manage_names"] = {s.id: s.name for s in saved}
    m = st.columns([2, 1, 2, 1, 1])
    pick = m[0].selectbox(
        "Saved scenario",
        list(by_id),
        format_func=lambda i: by_id[i].name,
        key="manage_pick",
        placeholder="Pick a saved scenario",
    )
    ref = None
    if pick is not None:
        ref = now = by_id[pick].ref
        seen = st.session_state.get("manage_seen")
        if seen is not None and seen.id == now.id and now.version > seen.version:  # changed elsewhere since
            if seen.name != now.name:
                news = f"“{md_escape(seen.name)}” was renamed to “{md_escape(now.name)}” by someone else"
            else:
                news = f"“{md_escape(now.name)}” was saved again by someone else (now version {now.version})"
            st.info(
                f"{news} since this page last showed it. A click made on what you saw before is refused; "
                "check it is still the one you mean, then open, rename or delete it."
            )
            ref = seen  # the buttons act on the version the session saw: a click on it is refused, not applied
        st.session_state["manage_seen"] = now
    else:
        st.session_state.pop("manage_seen", None)
    no_pick = "Pick a saved scenario first" if ref is None else None
    m[1].button(
        "Open",
        key="open_button",
        on_click=actions.open_ref,
        args=(store, ref),
        disabled=ref is None,
        help=no_pick or "Make it the current scenario",
    )
    m[2].text_input("Rename to", key="rename_to", max_chars=100, disabled=read_only, help=why_not)
    for col, label, key, action in (
        (m[3], "Rename", "rename_button", actions.rename_ref),
        (m[4], "Delete", "delete_button", actions.delete_ref),
    ):
        col.button(
            label,
            key=key,
            on_click=action,
            args=(store, ref),
            disabled=read_only or ref is None,
            help=why_not or no_pick,
        )

    # ---- comparison
    st.subheader("Side by side")
    names = [s.name for s in saved]
    if "compare_pick" in st.session_state:  # drop choices someone else has deleted or renamed since
        st.session_state["compare_pick"] = [n for n in st.session_state["compare_pick"] if n in names][:3]
    chosen = st.multiselect(
        "Compare (two to four; the current scenario is always included)",
        names,
        max_selections=3,
        key="compare_pick",
        **({} if "compare_pick" in st.session_state else {"default": names[: min(2, len(names))]}),
    )

    @st.cache_data(show_spinner="Evaluating…", max_entries=64)
    def _row(label, scen, cfg_json):
        model = model_from_config_text(cfg_json)[0] if cfg_json else None
        try:
            return compare_row(label, scen, catalog(), model)
        except ValueError as e:
            return {"scenario": label, "fit": f"cannot evaluate: {e}"}

    current_cfg = imported_models().get(scenario.model_id, (None, None))[1]
    rows = [_row("current scenario", scenario, current_cfg)]
    by_name = {s.name: s for s in saved}
    for n in chosen:
        rows.append(_row(n, by_name[n].scenario, by_name[n].model_config_json))
    table = pd.DataFrame(rows).set_index("scenario").T.fillna("")
    st.dataframe(table.astype(str), width="stretch")
    st.caption(
        "Best decode layout and tokens/s per GPU from the Layouts page's search on each scenario's cluster; $ per "
        "million output tokens at the GPU's default price; speculative speedup at low batch from each scenario's "
        "draft settings."
    )
