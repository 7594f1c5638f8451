"""GQA's two capped kinds of attention (design review 3, P6): a sliding window (a token attends the last w tokens)
and a chunk (Llama 4's local layers: a token attends only the earlier tokens of its own w-token chunk) cap the
cache alike but not the keys a prompt's tokens attend on average; and the one owner of a causal prompt's capped
mean, ``mixers.base.mean_min``, that every mixer uses. Every expected value is worked by hand in its comment."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.catalog import load_catalog
from core.model.mixers import base, compressed, csa2, gqa, qsa
from core.model.mixers.base import mean_chunked, mean_min
from core.model.mixers.compressed import CompressedAttention
from core.model.mixers.gqa import GQA

ROOT = Path(__file__).resolve().parents[2]
cat = load_catalog()

# Mistral-7B's geometry: 32 query heads, 8 KV heads of 128; QK^T and PV cost 2 (128 + 128) = 512 FLOPs per key and
# query head, 32 x 512 = 16,384 per attended key on one rank
GEO = dict(num_heads=32, num_kv_heads=8, head_dim=128)
PER_KEY = 16_384


def test_mean_min_by_hand():
    # below the cap a causal prompt's tokens attend ctx / 2 on average: 100 / 2 = 50
    assert float(mean_min(100, 128)) == 50.0
    # above it: (cap^2 / 2 + cap (ctx - cap)) / ctx = cap - cap^2 / (2 ctx): 128 - 16,384 / 8,192 = 126
    assert float(mean_min(4096, 128)) == 126.0
    # vectorised, the same values
    assert mean_min(np.array([100.0, 4096.0]), 128).tolist() == [50.0, 126.0]


def test_mean_chunked_by_hand():
    # within the first chunk, as full attention: 1,000 / 2 = 500
    assert float(mean_chunked(1000, 8192)) == 500.0
    # two whole chunks average 8,192 / 2 = 4,096 each
    assert float(mean_chunked(16_384, 8192)) == 4096.0
    # 20,000 = 2 x 8,192 + 3,616: (16,384 x 8,192 + 3,616^2) / (2 x 20,000) = (134,217,728 + 13,075,456) / 40,000
    assert float(mean_chunked(20_000, 8192)) == pytest.approx(147_293_184 / 40_000, rel=1e-12)  # 3,682.33
    assert float(mean_chunked(0, 8192)) == 0.0


@pytest.mark.parametrize(("fn", "arg"), [(mean_min, "cap"), (mean_chunked, "chunk")])
def test_the_means_refuse_bad_input_by_name(fn, arg):
    with pytest.raises(ValueError, match="ctx must be finite and >= 0"):
        fn(float("nan"), 128)
    with pytest.raises(ValueError, match="ctx must be finite and >= 0"):
        fn(np.array([10.0, -1.0]), 128)
    with pytest.raises(ValueError, match=rf"{arg} must be a finite number in \(0, "):
        fn(100, 0)


def test_sliding_window_prefill_attends_the_window_not_half_of_it():
    layer = GQA(**GEO, sliding_window=4096)
    # an 8,192-token prompt: the first 4,096 tokens attend 2,048 on average, the next 4,096 attend 4,096 each:
    # mean 3,072 (= 4,096 - 4,096^2 / 16,384), 16,384 x 3,072 = 50,331,648 FLOPs per token (min(ctx, w) / 2 gave
    # 2,048, a third low; for prompts >> w it was half)
    assert float(layer.score_flops_per_token(8192, 1, "prefill")) == 50_331_648
    # a prompt shorter than the window is full attention: 16,384 x 1,000 = 16,384,000
    assert float(layer.score_flops_per_token(2000, 1, "prefill")) == 16_384_000
    # decode is unchanged: one token over the window, 16,384 x 4,096
    assert float(layer.score_flops_per_token(8192, 1, "decode")) == PER_KEY * 4096


def test_chunked_prefill_attends_half_a_chunk():
    layer = GQA(**GEO, chunk=8192)
    # 20,000 tokens in chunks of 8,192: 3,682.33 keys per token (above), 16,384 x 147,293,184 / 40,000
    assert float(layer.score_flops_per_token(20_000, 1, "prefill")) == pytest.approx(PER_KEY * 147_293_184 / 40_000)
    # the cache and a decode step are capped by the chunk as by a window of the same size
    sliding = GQA(**GEO, sliding_window=8192)
    assert float(layer.cache_bytes(20_000, "bf16")) == float(sliding.cache_bytes(20_000, "bf16"))
    assert layer.decode_read_bytes_per_rank(20_000, "bf16", 1) == sliding.decode_read_bytes_per_rank(20_000, "bf16", 1)
    # for a long prompt a sliding window attends about twice what a chunk of its size does: at 2,000,000 tokens
    # (2,000,000 = 244 x 8,192 + 1,152) 8,192 - 8,192^2 / 4,000,000 = 8,175.22 against
    # (1,998,848 x 8,192 + 1,152^2) / 4,000,000 = 4,093.97: 1.9969
    long = 2_000_000
    ratio = float(sliding.score_flops_per_token(long, 1, "prefill") / layer.score_flops_per_token(long, 1, "prefill"))
    assert ratio == pytest.approx(8175.222784 / 4093.97248, rel=1e-9)


def test_a_prefix_cache_past_the_window_computes_whole_windows():
    # 8,192-token prompt, the first 4,096 cached, window 4,096: every computed token attends exactly 4,096 keys.
    # From the means: (8,192 x 3,072 - 4,096 x 2,048) / 4,096 = (25,165,824 - 8,388,608) / 4,096 = 4,096
    layer = GQA(**GEO, sliding_window=4096)
    assert layer.prefill_score_flops_after(8192, 4096, 1) == PER_KEY * 4096
    # a chunk: the second of two 8,192 chunks averages 4,096 keys: (16,384 x 4,096 - 8,192 x 4,096) / 8,192
    assert GQA(**GEO, chunk=8192).prefill_score_flops_after(16_384, 8192, 1) == PER_KEY * 4096


def test_a_layer_has_a_sliding_window_or_a_chunk_not_both():
    with pytest.raises(ValueError, match=r"sliding_window \(4,096\) or a chunk \(8,192\), not both"):
        GQA(**GEO, sliding_window=4096, chunk=8192)
    with pytest.raises(ValueError, match="window"):  # the old single field is gone, not silently ignored
        GQA(**GEO, window=4096)
    assert GQA(**GEO, chunk=8192).window == 8192 and GQA(**GEO, sliding_window=128).window == 128
    assert GQA(**GEO).window is None


def test_labels_say_which_cap():
    assert GQA(**GEO, sliding_window=4096).label() == "GQA, sliding 4,096"
    assert GQA(**GEO, chunk=8192).label() == "GQA, chunked 8,192"
    assert list(GQA(**GEO, chunk=8192).cache_parts(100, "bf16")) == ["chunked K/V (a 8,192-token chunk)"]


def test_llama4_local_layers_are_chunked_and_mistral_slides():
    scout = cat.model("llama-4-scout")
    local = [g for g in scout.mixers if g.mixer.window]
    # Llama 4: attention_chunk_size 8,192 on the 3 of every 4 layers with RoPE (36 of 48)
    assert [(g.mixer.chunk, g.mixer.sliding_window, len(g.layers)) for g in local] == [(8192, None, 36)]
    assert [(g.mixer.sliding_window, g.mixer.chunk) for g in cat.model("mistral-7b").mixers] == [(4096, None)]


def test_v4_window_prefill_uses_the_same_mean():
    # DeepSeek-V4's window-only layer (ratio 0): 4 x 512 FLOPs per entry and head, 64 heads = 131,072 per entry;
    # a 4,096-token prompt over the 128-entry window attends 128 - 128^2 / 8,192 = 126 on average
    layer = CompressedAttention(
        num_heads=64, head_dim=512, q_lora_rank=1024, o_lora_rank=1024, o_groups=8, window=128, entry_bytes=584
    )
    assert float(layer.score_flops_per_token(4096, 1, "prefill")) == 131_072 * 126


def test_one_definition_of_the_capped_mean():
    # every mixer uses base's mean_min; no module of core defines its own copy
    assert csa2.mean_min is qsa.mean_min is compressed.mean_min is gqa.mean_min is base.mean_min
    copies = [
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "core").rglob("*.py")
        if "def _mean_min" in p.read_text(encoding="utf-8") or "def mean_min" in p.read_text(encoding="utf-8")
    ]
    assert copies == ["core/model/mixers/base.py"]
