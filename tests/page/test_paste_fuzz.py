"""Hostile text in every box a user can paste or upload into (issue #21), through AppTest: the Balance page's CSV
and Prometheus readers, the Catalog page's config.json import and the Speculative page's live scrape. An uploaded
file reaches the same reader as the paste after UTF-8 decoding (a file that is not UTF-8 is a message: see
pages/3_Balance.py and ui/state.register_model), so these cover uploads too; AppTest cannot drive a file
uploader.

Hypothesis builds texts from pieces that broke readers before or might: numbers past the float range, NaN and
infinities, negative and zero loads, a byte-order mark, control and bidi characters, Markdown and HTML, JSON of
the wrong shape (lists where numbers belong, nesting, huge integers), ragged CSV rows, duplicate Prometheus
samples. Each text must give either a result or a message (st.error / st.warning), never an exception.
Kept small (three drawn texts per box, seeded, no shrinking); the parsers' own fuzz is tests/unit/test_fuzz.py."""

import json
import zlib

import pytest
from hypothesis import Phase, given, seed, settings
from hypothesis import strategies as st

from core import balance as bal
from core.hf import model_from_config_text
from core.speculative import live
from tests.page._util import run_page
from ui.format import md_escape

NUMBERS = ("1", "0", "-3", "1e308", "1e30", "NaN", "inf", "-inf", "12O", "٣", "0x10", "1_000", "", " ", "9" * 400)
NOISE = ("\ufeff", "\u202e", "\x00", "\x1b[2J", "🙂", "[x](https:evil.example)", "<script>alert(1)</script>", '"', "{")


def csv_texts():
    row = st.lists(st.sampled_from(NUMBERS), min_size=1, max_size=10).map(",".join)
    return st.lists(st.one_of(row, st.sampled_from(NOISE)), min_size=1, max_size=6).map("\n".join)


def prometheus_texts():
    sample = st.builds(
        lambda name, layer, expert, value: f'{name}{{layer="{layer}",expert="{expert}"}} {value}',
        st.sampled_from(("vllm:expert_load", "sglang:expert_load", "m", "")),
        st.sampled_from(("0", "1", "-1", "x", "99999999999")),
        st.sampled_from(("0", "7", "8", "-2", "5000", "🙂")),
        st.sampled_from(NUMBERS),
    )
    return st.lists(st.one_of(sample, st.sampled_from(NOISE)), min_size=1, max_size=12).map("\n".join)


def config_texts():
    value = st.one_of(
        st.sampled_from((None, True, -1, 0, 10**30, 1e308, "7", [], [1, 2], {"a": 1}, "🙂")),
        st.integers(1, 300_000),
    )
    keys = st.sampled_from(
        (
            "model_type",
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "num_key_value_heads",
            "n_routed_experts",
            "num_experts_per_tok",
            "moe_intermediate_size",
            "intermediate_size",
            "vocab_size",
            "max_position_embeddings",
            "kv_lora_rank",
            "first_k_dense_replace",
        )
    )
    base = {"model_type": "deepseek_v3", "hidden_size": 1024, "num_hidden_layers": 4, "vocab_size": 1000}
    edited = st.dictionaries(keys, value, max_size=5).map(lambda d: json.dumps({**base, **d}))
    return st.one_of(edited, st.sampled_from(NOISE), st.just("[" * 5000), st.just('{"a": ' * 200 + "1" + "}" * 200))


def scrape_texts():
    counter = st.builds(
        lambda name, value: f"{name} {value}",
        st.sampled_from(
            (
                "vllm:spec_decode_num_accepted_tokens_total",
                "vllm:spec_decode_num_draft_tokens_total",
                "vllm:spec_decode_num_drafts_total",
                "sglang:spec_accept_length",
            )
        ),
        st.sampled_from(NUMBERS),
    )
    return st.lists(st.one_of(counter, st.sampled_from(NOISE)), min_size=1, max_size=6).map("\n".join)


# page, query, (selectbox index, value) that reveals the box or None, box key or index, texts
BOXES = {
    "balance-csv": ("pages/3_Balance.py", {"model": "mixtral-8x7b"}, "paste / upload CSV", 0, csv_texts()),
    "balance-prometheus": ("pages/3_Balance.py", {"model": "mixtral-8x7b"}, "Prometheus scrape", 0, prometheus_texts()),
    "catalog-config": ("pages/8_Catalog.py", {}, None, "cfg_paste", config_texts()),
    "speculative-scrape": (
        "pages/4_Speculative.py",
        {"model": "deepseek-v3", "sd": "mtp"},
        None,
        "live_scrape",
        scrape_texts(),
    ),
}


def _loads_verdict(parse, experts: int):
    """What the Balance page answers a pasted text with: its reader (``parse``), then the model's expert count."""

    def verdict(text: str) -> tuple[str, str]:
        if not text.strip():
            return "info", "Paste or upload loads to analyse them"
        try:
            loads = parse(text)
        except ValueError:
            return "error", "Could not read the loads: "
        if loads.shape[1] != experts:
            return "error", f"The data has {loads.shape[1]} experts per row"
        return "success", f"Read {loads.shape[0]} layer(s) × {experts} experts."

    return verdict


def _config_verdict(text: str) -> tuple[str, str]:
    """The Catalog page's import: the importer's refusal as an error, else the imported model's summary."""
    if not text.strip():
        return "none", ""
    try:
        spec, _ = model_from_config_text(text)
    except ValueError:
        return "error", "Could not import this config.json: "
    return "success", f"**{md_escape(spec.name)}**: {spec.architecture}"


def _scrape_verdict(gamma: int):
    """The Speculative page's live scrape: the reader's refusal as an error, else the observed tokens per step."""

    def verdict(text: str) -> tuple[str, str]:
        if not text.strip():
            return "none", ""
        try:
            obs = live.spec_observation(text)
            g = round(obs.gamma) if obs.gamma else gamma
            live.implied_alpha(min(obs.tokens_per_step, g + 1), g)
        except ValueError:
            return "error", "Could not read the scrape: "
        return "metric", f"{obs.tokens_per_step:.2f}"

    return verdict


VERDICTS = {
    "balance-csv": lambda at: _loads_verdict(bal.parse_loads_csv, 8),  # Mixtral 8x7B: 8 routed experts
    "balance-prometheus": lambda at: _loads_verdict(lambda t: bal.parse_prometheus_loads(t)[0], 8),
    "catalog-config": lambda at: _config_verdict,
    "speculative-scrape": lambda at: _scrape_verdict(at.session_state.scenario.spec.num_speculative_tokens),
}


def _answered(at, kind: str, start: str) -> bool:
    """The page shows the expected answer: a message of that kind starting with ``start``, or the metric."""
    if kind == "metric":
        return any(m.label == "Observed tokens per step" and m.value == start for m in at.metric)
    if kind == "none":
        return not at.error and not [m for m in at.metric if m.label == "Observed tokens per step"]
    return any(e.value.startswith(start) for e in getattr(at, kind))


@pytest.mark.parametrize("box", list(BOXES))
def test_hostile_text_in_every_paste_box(box):
    page, query, source, key, texts = BOXES[box]
    at = run_page(page, timeout=120, **query)
    if source is not None:
        at.selectbox[0].set_value(source).run()
    assert not at.exception
    expected = VERDICTS[box](at)

    @seed(zlib.crc32(box.encode()))
    @settings(max_examples=3, deadline=None, database=None, phases=(Phase.generate,))
    @given(texts)
    def check(text):
        area = at.text_area(key=key) if isinstance(key, str) else at.text_area[key]
        area.input(text).run()
        assert not at.exception, (text[:200], [e.value for e in at.exception])
        # the answer the page's own reader gives this text, read here from the same core reader: the refusal as an
        # error, or the result
        kind, start = expected(text)
        shown = {k: [e.value[:120] for e in getattr(at, k)] for k in ("error", "warning", "success", "info")}
        assert _answered(at, kind, start), (text[:200], kind, start, shown)

    check()
