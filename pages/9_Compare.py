"""Compare & saved: save the scenario under a name, reopen, rename or delete it, compare two to four."""

import pandas as pd
import streamlit as st

from core.hf_config import model_from_config_text
from core.report import compare_row
from core.store import open_store
from ui.scenario import catalog, current_model, imported_models, page, update_scenario

scenario, cat, *_ = page("Compare & saved", "🗂️")


@st.cache_resource(show_spinner=False)
def _store():
    """One store per server process (PLANNER_DB: a path or sqlite:///path; default ~/.moe-planner/scenarios.db)."""
    return open_store()


try:
    store = _store()
    saved = store.list()
except (ValueError, OSError) as err:
    st.error(f"The scenario store is not available: {err}. Set PLANNER_DB to a writable SQLite path.")
    st.stop()

st.title("Compare & saved scenarios")

# ---- save
st.subheader("Save the current scenario")
c = st.columns([3, 1, 1])
name = c[0].text_input("Name", key="save_name", max_chars=100, placeholder="e.g. baseline-8xH200")
overwrite = c[1].checkbox("Overwrite", key="save_overwrite")
if c[2].button("Save", type="primary", key="save_button"):
    model = current_model(scenario)
    cfg = imported_models().get(model.id, (None, None))[1]
    try:
        store.save(name, scenario, model_config_json=cfg, overwrite=overwrite)
    except ValueError as err:
        st.error(f"Not saved: {err}")
    else:
        st.success(f"Saved “{name.strip()}”.")
        saved = store.list()


def _open(item) -> None:
    if item.model_config_json:
        spec, norm = model_from_config_text(item.model_config_json)
        imported_models()[spec.id] = (spec, norm)
    update_scenario(**item.scenario.model_dump())


# ---- saved list
st.subheader(f"Saved scenarios ({len(saved)})")
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
    names = [s.name for s in saved]
    m = st.columns([2, 1, 2, 1, 1])
    pick = m[0].selectbox("Saved scenario", names, key="manage_pick")
    item = next(s for s in saved if s.name == pick)
    m[1].button("Open", key="open_button", on_click=_open, args=(item,), help="Make it the current scenario")
    new_name = m[2].text_input("Rename to", key="rename_to", max_chars=100)
    if m[3].button("Rename", key="rename_button"):
        try:
            store.rename(pick, new_name)
        except ValueError as err:
            st.error(f"Not renamed: {err}")
        else:
            st.rerun()
    if m[4].button("Delete", key="delete_button"):
        store.delete(pick)
        st.rerun()

    # ---- comparison
    st.subheader("Side by side")
    chosen = st.multiselect(
        "Compare (two to four; the current scenario is always included)",
        names,
        default=names[: min(2, len(names))],
        max_selections=3,
        key="compare_pick",
    )

    @st.cache_data(show_spinner="Evaluating…", max_entries=64)
    def _row(label, scen, cfg_json):
        model = model_from_config_text(cfg_json)[0] if cfg_json else None
        return compare_row(label, scen, catalog(), model)

    current_cfg = imported_models().get(scenario.model_id, (None, None))[1]
    rows = [_row("current scenario", scenario, current_cfg)]
    for n in chosen:
        s = next(x for x in saved if x.name == n)
        rows.append(_row(n, s.scenario, s.model_config_json))
    table = pd.DataFrame(rows).set_index("scenario").T
    st.dataframe(table.astype(str), width="stretch")
    st.caption(
        "Best decode layout and tokens/s per GPU from the Layouts page's search on each scenario's cluster; $ per "
        "million output tokens at the GPU's default price; speculative speedup at low batch from each scenario's "
        "draft settings."
    )
