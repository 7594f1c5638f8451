"""User text (URL values, an imported config's name, pasted files echoed in errors) renders as text, never as
Markdown links, images or HTML; the sidebar shows the scenario the pages compute; text boxes and imports are
bounded (issue 21).

AppTest sees the Markdown source each element sends. ``ui.format.md_escape`` was checked in Chromium against
Streamlit 1.67's renderer (links, images, raw HTML, bare URLs, shortcodes: none rendered); here the source must
hold none of the hostile markup unescaped.
"""

import json
import re

import pytest
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message

from core.catalog import CATALOG_DIR
from core.hf import encode_config, model_from_config_text
from tests.page._util import run_page
from ui.format import md_escape

# Markdown-bearing fields of the element protos: st.markdown / caption / alerts / headings ("body"), widget and
# metric labels and tooltips, expander labels. Not selectbox options, tables or chart specs: plain text there.
_MD_FIELDS = {"body", "label", "help", "delta"}

# link, image and HTML in a name an imported config.json may carry (no "/": the importer keeps what follows it)
HOSTILE_NAME = "![x](https:e.vil)[a](https:e.vil)<img src=x onerror=alert(1)>"
MARKERS = ("![x](", "[a](", "<img", "https:e", "https://e", "](https")


def markdown_strings(at) -> list[str]:
    out: list[str] = []

    def walk(d):
        if isinstance(d, dict):
            for k, v in d.items():
                if k in _MD_FIELDS and isinstance(v, str):
                    out.append(v)
                else:
                    walk(v)
        elif isinstance(d, list):
            for v in d:
                walk(v)

    for root in (at.sidebar, at.main):
        for node in root:
            proto = getattr(node, "proto", None)
            if isinstance(proto, Message):
                walk(MessageToDict(proto))
    return out


def markup(md: str) -> str:
    """``md`` with each backslash-escaped character blanked out: what is left is what the renderer parses."""
    return re.sub(r"\\.", "\0", md)


def unescaped(at) -> list[str]:
    """Every Markdown string of the page that holds hostile markup as markup."""
    return [s for s in markdown_strings(at) if any(m in markup(s) for m in MARKERS)]


def plain(md: str) -> str:
    """What a reader sees of escaped text: backslash escapes and word joiners removed."""
    return re.sub(r"\\(.)", r"\1", md).replace("\u2060", "")


def _config(model_id: str, **changes) -> str:
    cfg = json.loads((CATALOG_DIR / "models" / model_id / "config.json").read_text())
    cfg.update(changes)
    return json.dumps(cfg)


def test_md_escape_leaves_nothing_to_render():
    # each construct the renderer would draw (checked in Chromium), and what is left of it
    assert md_escape("[Sign in again](https:evil.example)") == "\\[Sign in again\\](https\u2060\\:evil.example)"
    assert md_escape("![](https://evil.example/x.png)") == "!\\[\\](https\u2060://evil.example/x.png)"
    assert md_escape("<img src=x onerror=alert(1)>") == "\\<img src=x onerror=alert(1)\\>"
    assert md_escape("www.evil.example a@evil.example") == "www\u2060.evil.example a@\u2060evil.example"
    assert (
        md_escape(":red[x] $x$ :smile: *b* _i_ `c` |")
        == "\\:red\\[x\\] \\$x\\$ :\u2060smile: \\*b\\* \\_i\\_ \\`c\\` \\|"
    )
    assert md_escape("# title\n- item\x1b[31m") == "\\# title - item \\[31m"
    assert md_escape("1. first") == "1\\. first"
    # ordinary names stay readable in the source: ids, versions, snake_case fields
    assert md_escape("DeepSeek-V3.1 (imported)") == "DeepSeek-V3.1 (imported)"
    assert md_escape("missing field 'num_local_experts'") == "missing field 'num_local_experts'"
    for s in ("[Sign in](https:evil.example) <b>x</b> :red[y]", "1. first", "www.a.b"):
        assert plain(md_escape(s)) == s


def test_hostile_url_values_render_as_text_in_the_sidebar():
    at = run_page("app.py", gpu="[Sign in again](https:evil.example)", model="![](https://evil.example/x.png)")
    warnings = [w.value for w in at.sidebar.warning]
    assert len(warnings) == 2
    assert not [w for w in warnings if "](https" in markup(w) or "https://evil" in markup(w)], warnings
    # the value is still shown, as text, so the user sees what was wrong
    seen = " | ".join(plain(w) for w in warnings)
    assert "gpu='[Sign in again](https:evil.example)' is not a known GPU id" in seen
    assert "model='![](https://evil.example/x.png)' is not a known model id" in seen


@pytest.mark.parametrize("page", ["app.py", "pages/1_Fit.py", "pages/11_Single_box.py"])
def test_hostile_imported_model_name_is_escaped_everywhere_it_is_rendered(page):
    spec, norm = model_from_config_text(_config("mixtral-8x7b", _name_or_path=HOSTILE_NAME))
    assert spec.name == HOSTILE_NAME + " (imported)"
    at = run_page(page, timeout=120, model=spec.id, cfg=encode_config(norm), gpu="h100-sxm", w="bf16")
    assert unescaped(at) == []
    # the page still names the model, escaped
    assert any(md_escape(HOSTILE_NAME) in s for s in markdown_strings(at))


def test_catalog_import_echoes_the_name_and_errors_as_text():
    at = run_page("pages/8_Catalog.py")
    at.text_area(key="cfg_paste").input(_config("mixtral-8x7b", _name_or_path=HOSTILE_NAME)).run()
    assert not at.error, [e.value for e in at.error]
    assert unescaped(at) == []
    assert md_escape(HOSTILE_NAME) in at.success[0].value
    assert at.button[0].label == f"Plan with {md_escape(HOSTILE_NAME)} (imported)"
    # a config value echoed in the importer's error
    at.text_area(key="cfg_paste").input('{"model_type": "[a](https:e.vil)"}').run()
    assert at.error and unescaped(at) == []
    assert "architecture '[a](https:e.vil)' is not supported" in plain(at.error[0].value)


# ---- bounded text boxes and imports


def _text_boxes():
    """(file, line, label) of every st.text_area / st.text_input call in the app, and whether it has max_chars."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for path in sorted([root / "app.py", *(root / "pages").glob("*.py"), *(root / "ui").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("text_area", "text_input")
            ):
                yield f"{path.relative_to(root)}:{node.lineno}", any(k.arg == "max_chars" for k in node.keywords)


def test_every_text_box_has_a_character_limit():
    boxes = list(_text_boxes())
    assert len(boxes) >= 6  # Catalog paste and name, Balance paste, Speculative scrape, Compare name and rename
    assert [where for where, bounded in boxes if not bounded] == []


def test_a_paste_over_the_limit_is_refused_by_the_box():
    from core.hf import MAX_CONFIG_BYTES

    at = run_page("pages/8_Catalog.py")
    box = at.text_area(key="cfg_paste")
    assert box.max_chars == MAX_CONFIG_BYTES == 1_000_000  # what the importer accepts
    # a browser stops typing and pasting at the limit; AppTest's input() does the same
    box.input("x" * (MAX_CONFIG_BYTES + 1)).run()
    assert at.text_area(key="cfg_paste").value == "" and not at.error
    # a client that ignores the limit (a scripted websocket) is cut to it by the server, and told so
    at.text_area(key="cfg_paste").set_value("{" + " " * (3 * MAX_CONFIG_BYTES)).run()
    assert len(at.text_area(key="cfg_paste").value) == MAX_CONFIG_BYTES
    assert "reached this box's limit of 1,000,000 characters" in plain(at.warning[0].value)


def test_imports_per_session_are_bounded_oldest_first_never_the_one_in_use():
    from ui.state import MAX_IMPORTED_MODELS

    specs = [model_from_config_text(_config("mixtral-8x7b", _name_or_path=f"m{i}")) for i in range(21)]
    held = {spec.id: (spec, norm) for spec, norm in specs[:MAX_IMPORTED_MODELS]}
    # the scenario uses the oldest import (m0): it stays; the next oldest (m1) goes
    oldest, norm0 = specs[0]
    at = run_page("pages/8_Catalog.py", model=oldest.id, cfg=encode_config(norm0))
    at.session_state["custom_models"] = held
    at.text_area(key="cfg_paste").input(specs[20][1]).run()
    assert not at.exception and not at.error
    kept = list(at.session_state["custom_models"])
    assert len(kept) == MAX_IMPORTED_MODELS == 20
    assert specs[1][0].id not in kept and oldest.id in kept and specs[20][0].id in kept
    assert at.session_state.scenario.model_id == oldest.id
    assert [plain(t.value) for t in at.toast] == [
        "At most 20 imported models are kept per session: dropped the oldest, m1 (imported). Import it again to use it."
    ]


def test_visible_text_drops_invisible_format_characters_and_blanks_controls():
    """Issue 37 (SEC-5): one helper for the app, the Markdown and the HTML report."""
    from ui.format import visible_text

    for c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c\u200b\u200d\u2060\ufeff":
        assert visible_text(f"a{c}b") == "ab", hex(ord(c))
        assert md_escape(f"a{c}b") == "ab", hex(ord(c))
    assert visible_text("a\x1b[31m\nb\u2028c\x85d") == "a [31m b c d"
    assert visible_text("a\ud800b") == "a\ufffdb"  # a lone surrogate (JSON "\ud800") cannot be written as UTF-8
    assert visible_text("DeepSeek-V3 (imported) 🙂 é 中文 العربية") == "DeepSeek-V3 (imported) 🙂 é 中文 العربية"
