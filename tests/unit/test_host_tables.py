"""Issue 22: n-gram tables meant to live off the GPU, as data the planner reads (the ``core.model.HostTable`` s of a
``core.model.LookupTables`` extra): DeepSeek-V4.1-Flash's two Engram tables and Qwen3.8-Flash-Next's n-gram (PLE)
table, read from the catalog's config.json files through the same readers a pasted config goes through.

Published figures: DeepSeek-V4.1-Flash tech report (sections 2.1, 2.4.2): "552B backbone parameters and 196B
Engram parameters", n-gram orders {2, 3, 4} x 8 hash heads, 2048 per order, ~16M entries per head, tables of
distinct prime sizes; 16B active per decode token; field notes (reviews/field-2026.md): 203 GB of tables,
"~13 KB of engram per token". Qwen3.8-Flash-Next: a 51B N-gram embedding table (ms-swift best practice, SGLang
cookbook). The row rules are the public implementations' (ROCm/ATOM EngramLayout, transformers
Qwen4ExpNGramEmbedding); the primes below are found by this file's own trial division. Every other expected
value is worked by hand in its comment."""

import json
from pathlib import Path

import pytest

from core.catalog import load_catalog
from core.hf import model_from_hf_config
from core.model import params


def _tables(m):
    """The model's lookup tables: those of its off-GPU table extra (core.model.extras.lookup_tables), () without."""
    return next((e.tables for e in m.extras if e.kind == "lookup_tables"), ())


ROOT = Path(__file__).resolve().parents[2]
CAT = load_catalog()


def _config(model_id: str) -> dict:
    return json.loads((ROOT / f"catalogs/models/{model_id}/config.json").read_text())


def _with_text(model_id: str, **text) -> dict:
    cfg = _config(model_id)
    cfg["text_config"] = {**cfg["text_config"], **text}
    return cfg


def _primes_from(start: int, count: int) -> list[int]:
    """The first ``count`` primes >= ``start``, by trial division (independent of the readers' search)."""
    out, n = [], start
    while len(out) < count:
        if n > 1 and all(n % d for d in range(2, int(n**0.5) + 1)):
            out.append(n)
        n += 1
    return out


# -- DeepSeek-V4.1-Flash: Engram ------------------------------------------------------------------------------


def test_engram_row_counts_follow_the_hash_layout():
    # every (order, head) pair owns a prime-sized slice; primes are drawn upward from engram_vocab_size - 1 =
    # 15,999,999, never reused: layer 1's 3 orders x 8 heads take the first 24, layer 14's the next 24. Their
    # sums are the config's engram_num_embeddings, so the row rule (24 rows per token per table) is the one
    # that produced the published tables
    primes = _primes_from(15_999_999, 48)
    assert primes[0] == 16_000_057 and len(set(primes)) == 48
    assert [sum(primes[:24]), sum(primes[24:])] == [384_006_168, 384_016_682]
    assert _config("deepseek-v4.1-flash")["text_config"]["engram_num_embeddings"] == [384_006_168, 384_016_682]


def test_engram_tables_by_hand():
    m = CAT.model("deepseek-v4.1-flash")
    t1, t14 = _tables(m)
    # one table per Engram layer (0-based 1 and 14); a row is one hash head's 256 values (engram_head_dim; 8 heads
    # x 256 = the report's 2048 per order), stored as 256 E4M3 bytes + 256 / 32 = 8 E8M0 scales = 264 B; a token
    # reads (4 - 1) orders x 8 heads = 24 rows of each table
    assert (t1.rows, t1.layer_ids, t14.rows, t14.layer_ids) == (384_006_168, (1,), 384_016_682, (14,))
    for t in (t1, t14):
        assert (t.row_width, t.row_bytes, t.rows_per_token) == (256, 264, 24)
    # bytes: (384,006,168 + 384,016,682) = 768,022,850 rows x 264 = 202,758,032,400 B, the field notes' 203 GB
    # (188.8 GiB; 47.2 GiB per rank at TP4 as an SGLang recipe reports: 202,758,032,400 / 4 / 2^30 = 47.2)
    total_bytes = t1.bytes + t14.bytes
    assert total_bytes == 202_758_032_400
    assert total_bytes == pytest.approx(203e9, rel=0.01)
    assert total_bytes / 4 / 2**30 == pytest.approx(47.2, abs=0.05)
    # parameters: 768,022,850 x 256 = 196,613,849,600, the report's 196B (the field notes round to 197B)
    assert t1.params + t14.params == 196_613_849_600
    assert t1.params + t14.params == pytest.approx(196e9, rel=0.01)
    # per token: 2 tables x 24 rows x 264 B = 12,672 B, the "~13 KB of engram per token"; 48 rows per token over
    # both tables (the field notes' "<= 48 row reads/table/token" counts both tables: 24 per table)
    per_token = sum(t.rows_per_token * t.row_bytes for t in _tables(m))
    assert per_token == 12_672 and per_token == pytest.approx(13e3, rel=0.03)
    assert sum(t.rows_per_token for t in _tables(m)) == 48


def test_v41_backbone_excludes_the_tables():
    m = CAT.model("deepseek-v4.1-flash")
    # the backbone of tests/unit/test_mixer_csa2.py (551,566,249,589, no Engram fields there) + the two Engram
    # layers' GPU side: wkv (3 x 8 x 256 = 6,144) -> (4 + 1) x 5,120 = 157,286,400 and q/k gains 2 x 4 x 5,120
    # = 40,960, per layer 157,327,360, x 2 = 314,654,720 -> 551,880,904,309 against the published 552B (-0.02%)
    assert params.total_params(m) == 551_566_249_589 + 314_654_720 == 551_880_904_309
    assert params.total_params(m) == pytest.approx(552e9, rel=0.03)
    assert m.published.total_params == 552_000_000_000
    # the tables are not in it: backbone + tables = 748.5B, the report's 552B + 196B
    assert params.total_params(m) + sum(t.params for t in _tables(m)) == pytest.approx(748e9, rel=0.01)
    # decode active without the input embedding (DeepSeek's convention): test_mixer_csa2's 16,477,916,789 with
    # embedding and head, - 129,280 x 5,120 = 661,913,600, + 314,654,720 = 16,130,657,909 against 16B (+0.8%)
    assert m.published.active_convention == "excl_input_embedding"
    assert m.active_params == 16_477_916_789 - 661_913_600 + 314_654_720 == 16_130_657_909
    assert m.active_params == pytest.approx(16e9, rel=0.03)


def test_v41_without_engram_fields_has_no_tables():
    # a config without engram_layer_ids (the trimmed one of test_mixer_csa2) reads no table and no GPU side
    cfg = _config("deepseek-v4.1-flash")
    cfg["text_config"] = {k: v for k, v in cfg["text_config"].items() if not k.startswith("engram_")}
    m = model_from_hf_config(cfg, model_id="deepseek-v4.1-flash")
    assert _tables(m) == () and params.total_params(m) == 551_566_249_589


def test_v41_unquantised_rows_are_bf16():
    # without a quantization_config the rows are taken as bf16: 256 x 2 = 512 B
    cfg = _config("deepseek-v4.1-flash")
    del cfg["quantization_config"]
    m = model_from_hf_config(cfg, model_id="deepseek-v4.1-flash")
    assert {t.row_bytes for t in _tables(m)} == {512}


# -- Qwen3.8-Flash-Next: n-gram (PLE) ----------------------------------------------------------------------------


def test_qwen_ngram_table_by_hand():
    m = CAT.model("qwen3.8-flash-next")
    (t,) = _tables(m)
    # ngram_size 3: orders 2 and 3 x heads_per_ngram 8 = 16 hash heads; head k of the first (only) PLE layer owns
    # the (k + 1)-th prime after 19,999,999 rows; their sum padded up to a multiple of 128
    primes = _primes_from(20_000_000, 16)
    assert primes[0] == 20_000_003 and sum(primes) == 320_001_446
    assert -(-320_001_446 // 128) * 128 == 320_001_536
    assert t.rows == 320_001_536
    # ple_layer_ids [2] is one-indexed: layer index 1; rows of ple_embed_dim 2,560 / 16 = 160 bf16 values (320 B)
    assert (t.layer_ids, t.row_width, t.row_bytes, t.rows_per_token) == ((1,), 160, 320, 16)
    # 320,001,536 x 160 = 51,200,245,760 parameters (the published 51B), x 2 B = 102,400,491,520 B (95.4 GiB)
    assert t.params == 51_200_245_760 and t.params == pytest.approx(51e9, rel=0.01)
    assert t.bytes == 102_400_491_520 and t.bytes / 2**30 == pytest.approx(95.4, abs=0.05)
    # a token reads 16 rows x 320 B = 5,120 B
    assert t.rows_per_token * t.row_bytes == 5_120


def test_qwen_ngram_table_is_not_in_the_backbone():
    # the backbone stays test_catalog_2026_c's 125,743,656,320 (125B published); with the table 176.9B, the
    # published "176B total, 51B of which is an N-gram embedding table" (SGLang cookbook)
    m = CAT.model("qwen3.8-flash-next")
    assert params.total_params(m, include_vision=False) == 125_743_656_320
    assert params.total_params(m, include_vision=False) + _tables(m)[0].params == pytest.approx(176e9, rel=0.01)


def test_qwen_second_ple_layer_takes_the_next_primes():
    # two PLE layers (one-indexed 2 and 10): the second table's 16 slices are primes 17-32 after 19,999,999
    m = model_from_hf_config(_with_text("qwen3.8-flash-next", ple_layer_ids=[2, 10]), model_id="qwen3.8-flash-next")
    primes = _primes_from(20_000_000, 32)
    first, second = _tables(m)
    assert first.rows == 320_001_536 and first.layer_ids == (1,)
    assert second.rows == -(-sum(primes[16:]) // 128) * 128 and second.layer_ids == (9,)
    assert second.rows > first.rows


# -- readers: a malformed value names its field ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("model_id", "text", "message"),
    [
        (
            "deepseek-v4.1-flash",
            {"engram_num_embeddings": [-5, 384016682]},
            r"field 'engram_num_embeddings' lists -5; each table needs 383,999,976 to 10\^12 rows",
        ),
        (
            "deepseek-v4.1-flash",
            {"engram_layer_ids": [1, 40]},
            r"field 'engram_layer_ids' names layer 40, outside 0\.\.39",
        ),
        (
            "deepseek-v4.1-flash",
            {"engram_num_embeddings": [384006168]},
            r"field 'engram_num_embeddings' must give one row count per layer of 'engram_layer_ids' \(2\), got 1",
        ),
        ("deepseek-v4.1-flash", {"engram_layer_ids": [14, 14]}, "field 'engram_layer_ids' lists a layer twice"),
        ("deepseek-v4.1-flash", {"engram_max_ngram_size": 1}, r"field 'engram_max_ngram_size' must be >= 2"),
        ("deepseek-v4.1-flash", {"engram_head_dim": "256"}, "field 'engram_head_dim' must be an integer"),
        ("deepseek-v4.1-flash", {"engram_n_heads": 2048}, r"field 'engram_n_heads' must be <= 1,024"),
        ("qwen3.8-flash-next", {"ple_embed_dim": 2561}, r"field 'ple_embed_dim' \(2,561\) must divide into"),
        ("qwen3.8-flash-next", {"ngram_size": 1}, r"field 'ngram_size' must be >= 2"),
        ("qwen3.8-flash-next", {"heads_per_ngram": 0}, r"field 'heads_per_ngram' must be >= 1"),
        ("qwen3.8-flash-next", {"ngram_vocab_size_base": 10**11}, r"field 'ngram_vocab_size_base' .* exceeds 10\^12"),
        ("qwen3.8-flash-next", {"dtype": "int4"}, r"field 'dtype' must be one of bfloat16"),
    ],
)
def test_bad_table_fields_name_the_field(model_id, text, message):
    with pytest.raises(ValueError, match=message):
        model_from_hf_config(_with_text(model_id, **text), model_id=model_id)


# -- pages --------------------------------------------------------------------------------------------------------


def test_home_and_fit_render_v41_on_two_b200_nodes():
    # the catalog entry on 2 x 8 B200 in fp8: Home shows the backbone (551.9B -> "552B") and Fit renders
    from tests.page._util import metrics, run_page

    query = {"model": "deepseek-v4.1-flash", "gpu": "b200", "nodes": "2", "gpn": "8", "w": "fp8"}
    home = run_page("app.py", **query)
    assert not home.error, [e.value for e in home.error]
    assert metrics(home)["Total parameters"] == "552B"
    fit = run_page("pages/1_Fit.py", timeout=300, **query)
    assert not fit.error, [e.value for e in fit.error]
