"""Qwen Sparse Attention (QSA, Qwen3.8-Flash-Next's every fourth layer), added as one mixer file
(core/model/mixers/qsa.py), its reader (core/hf/qwen4.py) and this test.

The layer: gated GQA, 24 query / 2 KV heads x 256, q/k norms; an indexer of 4 query heads + 1 key head x 128
(``index_qk_proj`` 2560 -> 640, two norms of 128) picking the top 2,048 tokens from blocks of 4. Cache
formats are vLLM's (qwen3_8_flash_next common/qsa_cache.py: a raw key of 128 bf16 + 3 int64 MRoPE
positions = 280 B per token, a pooled bf16 key of 256 B per block of 4; nvidia/qsa.py: the K/V stays bf16).
Every expected value is worked by hand in its comment."""

import json
from pathlib import Path

import numpy as np
import pytest

from core import memory
from core.hf import SUPPORTED_MODEL_TYPES, model_from_config_text, model_from_hf_config
from core.model import ModelSpec
from core.model.mixers import MIXER_KINDS
from core.model.mixers.gqa import GQA
from core.model.mixers.indexer import Indexer
from core.model.mixers.qsa import QSA

CONFIG = json.loads(
    (Path(__file__).resolve().parents[2] / "catalogs/models/qwen3.8-flash-next/config.json").read_text()
)
M = model_from_hf_config(CONFIG, model_id="qwen3.8-flash-next")
EXAMPLES = [M]  # the fuzz test builds hostile QSA layers from these
LAYER = next(g.mixer for g in M.mixers if isinstance(g.mixer, QSA))
H = 2560
CTX = 131072


def test_registered_by_existing():
    assert "qsa" in MIXER_KINDS and "qwen4_exp" in SUPPORTED_MODEL_TYPES
    # the pydantic union picks the kind up: a spec survives a JSON round trip
    assert ModelSpec.model_validate_json(M.model_dump_json()) == M
    pasted, _ = model_from_config_text(json.dumps(CONFIG))
    assert pasted.mixers == M.mixers
    # every fourth layer (3, 7, ..., 47) is QSA
    qsa = next(g for g in M.mixers if g.mixer is LAYER or g.mixer == LAYER)
    assert qsa.layers == tuple(range(3, 48, 4))
    assert LAYER.label() == "QSA, gated"


def test_parameters_by_hand():
    # q 2560 x 24 x 256 x 2 (output gate) = 31,457,280; k, v 2 x 2560 x 2 x 256 = 2,621,440; o 6,144 x 2560 =
    # 15,728,640; q/k norms 2 x 256 = 512; indexer 2560 x 5 x 128 = 1,638,400 + 2 x 128 = 256 -> 51,446,528
    assert LAYER.params(H) == 51_446_528
    # whole on every rank: norms 512 + indexer 1,638,656; the rest (49,807,360) split over TP 2, K/V over
    # their 2 heads: q, o 47,185,920 / 2 + k, v 2,621,440 / 2 + 1,639,168
    assert LAYER.replicated_params(H) == 1_639_168
    assert LAYER.params_per_rank(H, 2) == 23_592_960 + 1_310_720 + 1_639_168


def test_cache_per_token_and_sequence():
    # K/V 2 heads x (256 + 256) x 2 B = 2,048 B (bf16 whatever is asked) + raw key 280 B + pooled 256 / 4 = 64 B
    assert LAYER.cache_bytes_per_token("bf16") == 2392.0
    assert LAYER.cache_bytes_per_token("fp8") == 2392.0
    assert "QSA keeps bf16" in LAYER.cache_format("fp8") and "QSA keeps" not in LAYER.cache_format("bf16")
    parts = LAYER.cache_parts(np.float64(CTX), "fp8")
    assert parts == {
        "full-attention K/V": 2048 * CTX,  # 268,435,456
        "QSA raw index keys": 280 * CTX,  # 36,700,160
        "QSA pooled index keys": 64 * CTX,  # 8,388,608
    }
    # TP 4: the K/V splits over its 2 heads only, the index keys stay whole: 268,435,456 / 2 + 45,088,768
    assert LAYER.cache_bytes_per_rank(CTX, "bf16", 4) == 134_217_728 + 45_088_768
    with pytest.raises(ValueError, match="unknown KV cache dtype"):
        LAYER.cache_bytes_per_token("fp4")


def test_decode_reads_the_budget_and_the_pooled_keys():
    # at 128K: the 2,048 selected tokens' K/V (2,048 x 2,048 B = 4,194,304) + every pooled key
    # (32,768 blocks x 256 B = 8,388,608); TP 2 halves the K/V only
    assert LAYER.decode_read_bytes_per_rank(CTX, "bf16", 1) == 4_194_304 + 8_388_608
    assert LAYER.decode_read_bytes_per_rank(CTX, "fp8", 2) == 2_097_152 + 8_388_608
    # a 1,000-token context is read whole: 1,000 x 2,048 + 250 x 256
    assert LAYER.decode_read_bytes_per_rank(1000.0, "bf16", 1) == 2_048_000 + 64_000


def test_score_flops():
    # decode at 128K, TP 1: 24 heads x 2 x (256 + 256) per attended token (2,048) + the index scan,
    # 2 x 4 x 128 per pooled key (32,768): 50,331,648 + 33,554,432
    assert LAYER.score_flops_per_token(CTX, 1, "decode") == 24 * 1024 * 2048 + 1024 * 32768
    # prefill of 4,096 tokens, mean per token: min(p, 2,048) averages 2,048 - 2,048^2 / (2 x 4,096) = 1,536;
    # the scan averages 4,096 / 2 / 4 = 512 pooled keys
    assert LAYER.score_flops_per_token(4096, 1, "prefill") == pytest.approx(24 * 1024 * 1536 + 1024 * 512)
    # the prefill mean is the mean of the decode counts over the prompt's positions (a brute-force sum)
    ctx = 20000
    brute = np.mean([LAYER.score_flops_per_token(p, 1, "decode") for p in range(1, ctx + 1)])
    assert LAYER.score_flops_per_token(ctx, 1, "prefill") == pytest.approx(brute, rel=2e-3)


def test_model_cache_sums_the_layer_kinds():
    # 12 QSA layers x 2,392 B = 28,704 B per token; 36 Gated DeltaNet layers hold 48 x 128 x 128 x 4 B +
    # (2 x 16 x 128 + 48 x 128) x 3 x 2 B = 3,207,168 B each: 115,458,048 B per sequence
    assert memory.kv_bytes_per_token(M, "fp8") == 28_704
    assert memory.fixed_state_bytes_per_sequence(M) == 115_458_048
    # one 128K sequence: 28,704 x 131,072 + 115,458,048
    assert memory.kv_bytes_per_sequence(M, CTX, "fp8") == 3_762_290_688 + 115_458_048
    # one decode step at 128K: 12 x 12,582,912 (above) + every recurrent state
    assert memory.decode_read_bytes_per_sequence(M, CTX, "bf16") == 12 * 12_582_912 + 115_458_048


@pytest.mark.parametrize(
    ("update", "message"),
    [
        ({"topk_tokens": 2050}, "multiple of compress_ratio"),
        ({"indexer": Indexer(n_heads=4, head_dim=128)}, "its own indexer"),
        ({"sliding_window": 4096}, "no window"),
        ({"chunk": 8192}, "no window"),
        ({"stores_kv": False}, "stores its K/V"),
    ],
)
def test_bad_layers_are_refused(update, message):
    fields = {**LAYER.model_dump(), **{k: v for k, v in update.items() if k != "indexer"}}
    if "indexer" in update:
        fields["indexer"] = update["indexer"].model_dump()
    with pytest.raises(ValueError, match=message):
        QSA.model_validate(fields)


def test_plain_gqa_is_unchanged():
    # the subclass leaves its parent alone: a GQA layer of the same geometry has no index keys
    plain = GQA(num_heads=24, num_kv_heads=2, head_dim=256, qk_norm=True, output_gate=True)
    assert plain.params(H) == 51_446_528 - 1_638_656
    assert plain.cache_bytes_per_token("fp8") == 1024.0
