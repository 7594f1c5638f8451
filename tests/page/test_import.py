"""Importing a Hugging Face config.json in the browser (Catalog page) and carrying it in the URL."""

import json

from core.catalog import CATALOG_DIR, load_catalog
from core.hf import encode_config, model_from_config_text
from tests.page._util import metrics, qp, run_page

cat = load_catalog()


def _text(model_id):
    return (CATALOG_DIR / "models" / model_id / "config.json").read_text()


def test_pasted_deepseek_and_mixtral_match_their_catalog_entries():
    for mid in ("deepseek-v3", "mixtral-8x7b"):
        at = run_page("pages/8_Catalog.py")
        at.text_area(key="cfg_paste").input(_text(mid)).run()
        assert not at.error, [e.value for e in at.error]
        total = cat.model(mid).total_params / 1e9
        assert f"{total:,.2f}B parameters" in at.success[0].value
        at.button[0].click().run()  # plan with it
        q = qp(at)
        assert q["model"].startswith("custom-") and "cfg" in q


def test_imported_model_is_used_on_every_page_from_the_url():
    spec, norm = model_from_config_text(_text("mixtral-8x7b"), name="my-mixtral")
    query = {"model": spec.id, "cfg": encode_config(norm), "gpu": "h100-sxm", "w": "bf16"}
    at = run_page("app.py", **query)
    # 46,702,792,704 parameters, as the catalog's Mixtral 8x7B
    assert metrics(at)["Total parameters"] == "46.7B"
    for page in ("pages/1_Fit.py", "pages/2_Intensity.py", "pages/3_Balance.py", "pages/5_Layouts.py"):
        run_page(page, timeout=120, **query)


def test_bad_configs_are_refused_with_a_message():
    at = run_page("pages/8_Catalog.py")
    at.text_area(key="cfg_paste").input('{"model_type": "mamba"}').run()
    assert "architecture 'mamba' is not supported" in at.error[0].value
    at.text_area(key="cfg_paste").input("{not json").run()
    assert "not valid JSON" in at.error[0].value
    cfg = json.loads(_text("mixtral-8x7b"))
    del cfg["num_local_experts"]
    at.text_area(key="cfg_paste").input(json.dumps(cfg)).run()
    assert "missing field 'num_local_experts'" in at.error[0].value


def test_bad_cfg_in_url_warns_and_falls_back():
    at = run_page("app.py", model="custom-0000000000", cfg="%%%garbage")
    warnings = " | ".join(w.value for w in at.sidebar.warning)
    assert "URL parameter cfg" in warnings and "model='custom-0000000000' is not a known model id" in warnings


def test_an_absurd_value_is_imported_with_a_warning_that_names_it():
    # max_position_embeddings 10^12: within the importer's bounds (accepted, the model is usable) but 10^5 times
    # the longest published context: the import section says which field, its value and the plausible range
    cfg = json.loads(_text("mixtral-8x7b"))
    cfg["max_position_embeddings"] = 10**12
    at = run_page("pages/8_Catalog.py")
    at.text_area(key="cfg_paste").input(json.dumps(cfg)).run()
    assert not at.error, [e.value for e in at.error]
    assert "46.70B parameters" in at.success[0].value  # imported as the catalog's Mixtral 8x7B
    (warning,) = [w.value for w in at.warning if "max_position_embeddings" in w.value]
    assert "1,000,000,000,000 tokens" in warning and "plausible 1 to 100,000,000 tokens" in warning
    # the catalog's own Mixtral config warns of nothing
    at.text_area(key="cfg_paste").input(_text("mixtral-8x7b")).run()
    assert not [w.value for w in at.warning if "config.json:" in w.value]
