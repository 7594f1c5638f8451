"""AppTest runs of the Compare & saved page and the Report page."""

import pytest

from tests.page._util import qp, run_page


@pytest.fixture(autouse=True)
def _store(tmp_path, monkeypatch):
    monkeypatch.setenv("PLANNER_DB", str(tmp_path / "scenarios.db"))


def test_save_rename_open_compare_delete():
    at = run_page("pages/9_Compare.py", timeout=120)
    assert "Nothing saved yet" in at.info[0].value
    at.text_input(key="save_name").input("baseline").run()
    at.button(key="save_button").click().run()
    assert at.success[0].value == "Saved “baseline”."
    at.text_input(key="save_name").input("baseline").run()
    at.button(key="save_button").click().run()
    assert "a scenario named 'baseline' exists" in at.error[0].value
    at.sidebar.selectbox(key="_w_gpu").set_value("b200").run()
    at.text_input(key="save_name").input("on b200").run()
    at.button(key="save_button").click().run()
    saved = next(d.value for d in at.dataframe if "name" in d.value.columns)
    assert set(saved["name"]) == {"baseline", "on b200"}
    # compare: the current scenario beside the chosen saved ones
    at.multiselect(key="compare_pick").set_value(["baseline"]).run()
    table = at.dataframe[-1].value
    assert list(table.columns) == ["current scenario", "baseline"]
    assert table.loc["GPUs", "baseline"].endswith("H200 SXM 141GB") and "B200" in table.loc["GPUs", "current scenario"]
    # open the saved one: the scenario (and the URL) switch back to H200
    at.selectbox(key="manage_pick").set_value("baseline").run()
    at.button(key="open_button").click().run()
    assert qp(at)["gpu"] == "h200"
    at.selectbox(key="manage_pick").set_value("on b200").run()
    at.text_input(key="rename_to").input("b200 x8").run()
    at.button(key="rename_button").click().run()
    names = set(next(d.value for d in at.dataframe if "name" in d.value.columns)["name"])
    assert names == {"baseline", "b200 x8"}
    at.selectbox(key="manage_pick").set_value("b200 x8").run()
    at.button(key="delete_button").click().run()
    assert set(next(d.value for d in at.dataframe if "name" in d.value.columns)["name"]) == {"baseline"}


def test_report_page_offers_both_documents():
    at = run_page("pages/10_Report.py", timeout=120, model="mixtral-8x7b", gpu="h100-sxm", gpn="2", w="bf16")
    buttons = at.get("download_button")
    assert len(buttons) == 2
    text = " ".join(m.value for m in at.markdown)
    assert "# Mixtral-8x7B on 2 × NVIDIA H100 SXM5 80GB" in text and "**Verdict:** fits" in text
