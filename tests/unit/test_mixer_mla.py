"""Multi-head latent attention (core.model.mixers.mla) on DeepSeek-V3, every expected value worked by hand from
catalogs/models/deepseek-v3/config.json: hidden_size 7168, num_attention_heads 128, q_lora_rank 1536,
kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128, 61 layers, all MLA."""

from __future__ import annotations

from pathlib import Path

from core import memory
from core.catalog import load_catalog
from core.model.mixers import MIXER_KINDS
from core.model.mixers.mla import MLA

cat = load_catalog()
MODEL = cat.models["deepseek-v3"]
(GROUP,) = MODEL.mixers
LAYER = GROUP.mixer


def test_the_catalog_reads_the_config():
    assert isinstance(LAYER, MLA) and len(GROUP.layers) == 61
    assert (LAYER.num_heads, LAYER.q_lora_rank, LAYER.kv_lora_rank) == (128, 1536, 512)


def test_parameters_per_layer_by_hand():
    # q: q_a 7,168 x 1,536 = 11,010,048 + its norm 1,536 + q_b 1,536 x 128 heads x (128 + 64) = 37,748,736
    #    = 48,760,320
    # kv: kv_a 7,168 x (512 + 64) = 4,128,768 + its norm 512 + kv_b 512 x 128 x (128 + 128) = 16,777,216
    #    = 20,906,496
    # o: 128 x 128 x 7,168 = 117,440,512
    # 48,760,320 + 20,906,496 + 117,440,512 = 187,107,328
    assert LAYER.params(MODEL.hidden_size) == 187_107_328


def test_kv_bytes_per_token_by_hand():
    # one latent of 512 + a shared RoPE key of 64 = 576 elements per token and layer, whatever the 128 heads:
    # 576 x 2 B = 1,152 B in bf16; x 61 layers = 70,272 B per token
    assert LAYER.kv_elements_per_token() == 576
    assert LAYER.cache_bytes_per_token("bf16") == 1152
    assert memory.kv_bytes_per_sequence(MODEL, 1000, "bf16") == 70_272_000
    # the latent is whole on every TP rank: TP 8 holds as much per token as TP 1
    assert LAYER.cache_bytes_per_rank(1000, "bf16", 8) == 1_152_000


def test_every_mixer_kind_has_its_test_file():
    """Each kind of core.model.mixers.MIXER_KINDS has tests/unit/test_mixer_<kind>.py (or <its module>.py)."""
    here = Path(__file__).parent
    missing = [
        k
        for k, cls in MIXER_KINDS.items()
        if not (here / f"test_mixer_{k}.py").exists()
        and not (here / f"test_mixer_{cls.__module__.rsplit('.', 1)[-1]}.py").exists()
    ]
    assert not missing, f"mixer kinds without a test_mixer_<kind>.py: {missing}"
