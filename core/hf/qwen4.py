"""Qwen3.8-Flash-Next (``qwen4_exp``, ``Qwen4ExpForConditionalGeneration``), the preview of the Qwen4 layout.

Read from ``text_config`` (transformers ``Qwen4ExpTextConfig``): three of every four layers Gated DeltaNet, the
fourth Qwen Sparse Attention (:class:`core.model.mixers.qsa.QSA`: Qwen3.5's gated GQA + a compressed-block
token indexer); every layer MoE (``num_experts`` of ``moe_intermediate_size`` top-``num_experts_per_tok``
+ one gated shared expert); hyper-connections of ``hc_count`` residual streams (``Qwen4ExpGatedResidual``
before each mixer and each MoE block: a grouped RMSNorm hc x h, a low-rank input mixer hc x h -> rank ->
hc x h and an injection weight hc x h -> hc; the model's final mixer has no injection) take the place of the
layer norms; one MTP layer; a Qwen3-VL-style vision tower.

The per-layer embedding (PLE) layers (``ple_layer_ids``, one-indexed) add, on the GPU, a key projection ple_dim ->
hc x h, a value projection ple_dim -> h, three grouped norms and a depthwise conv (counted here with the model's
extras). Their n-gram tables (~51B parameters meant to live off the GPU; neither weights on the GPU nor KV) are the
:class:`core.model.HostTable` s of a :class:`core.model.LookupTables` extra, kept out of the backbone's counts.
transformers ``Qwen4ExpNGramEmbedding``: a token hashes its n-grams of orders 2..``ngram_size`` into
``heads_per_ngram`` heads each; head k of PLE layer j (its index in ``ple_layer_ids``) owns (j x heads + k + 1)-th
prime after ``ngram_vocab_size_base`` - 1 rows; a layer's table is their sum padded up to a multiple of
``make_ngram_vocab_size_divisible_by``, ``ple_embed_dim`` / heads wide, stored in the checkpoint's dtype; a token
reads one row per head.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.hf._common import MAX_HEAD_DIM, MAX_HEADS, gqa_geometry, moe_spec, text_common
from core.hf.fields import Fields
from core.hf.qwen import gated_deltanet
from core.hf.registry import reader
from core.hf.vision import qwen_vl_vision_params
from core.model import HostTable, LookupTables, group_layers
from core.model.mixers.qsa import QSA

__all__ = ["qwen4_exp"]

# vLLM qwen3_8_flash_next (PR #53896) common/qsa_cache.py: QSAKeyStateCache keeps a bf16 key of the index dim
# followed by three int64 MRoPE positions (Flash-Next: 128 x 2 + 3 x 8 = 280 B per token); QSACompressedKeyCache
# one bf16 pooled key per block (128 x 2 = 256 B); nvidia/qsa.py: "QSA does not support KV quantization" (bf16).
_QSA_KV_DTYPE = "bf16"
_BF16 = 2
_MROPE_POSITION_BYTES = 3 * 8

_DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}
_MAX_NGRAM = 16
_MAX_HASH_HEADS = 1024  # prime-sized slices over all n-gram tables: each costs a prime search near the base

_LINEAR = "linear_attention"
_SPARSE = ("full_attention", "qwen_sparse_attention", "deepseek_sparse_attention", "hybrid_indexed")


def _layer_kinds(t: Fields, layers: int) -> set[int]:
    """The linear-attention layers: ``layer_types`` (transformers also writes ``deepseek_sparse_attention`` /
    ``hybrid_indexed`` for QSA layers), else every layer but each ``full_attention_interval``-th."""
    types = t.cfg.get("layer_types")
    if isinstance(types, list) and types:
        if len(types) != layers or any(x != _LINEAR and x not in _SPARSE for x in types):
            raise t.error(
                f"field 'layer_types' must list '{_LINEAR}' or a sparse-attention type "
                f"({', '.join(_SPARSE)}) for each of the {layers} layers"
            )
        return {i for i, x in enumerate(types) if x == _LINEAR}
    every = t.int("full_attention_interval", default=4)
    return {i for i in range(layers) if (i + 1) % every}


def _hc_params(hidden: int, streams: int, rank: int, *, inject: bool = True) -> int:
    """One ``Qwen4ExpGatedResidual``: grouped RMSNorm ``hc h``, ``input_mix_weight_down`` ``hc h x rank``,
    ``input_mix_weight_up`` ``rank x hc h`` and (with ``inject``) ``block_inject_weight`` ``hc h x hc``."""
    wide = streams * hidden
    return wide + 2 * wide * rank + (wide * streams if inject else 0)


def _ple_params(hidden: int, streams: int, ple_dim: int, kernel: int) -> int:
    """A PLE layer's GPU side (its n-gram table apart): ``key_proj`` ple_dim x hc h, ``value_proj``
    ple_dim x h, three grouped RMSNorms of hc h, a depthwise conv of hc h channels x kernel (no bias)."""
    wide = streams * hidden
    return ple_dim * wide + ple_dim * hidden + 3 * wide + wide * kernel


def _is_prime(n: int) -> bool:
    """Deterministic Miller-Rabin: exact for n < 3.3e24 with the first twelve primes as bases."""
    if n < 2:
        return False
    small = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)
    if n in small:
        return True
    if any(n % p == 0 for p in small):
        return False
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for a in small:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def _ngram_tables(t: Fields, ple_ids: list[int]) -> tuple[HostTable, ...]:
    """One n-gram table per distinct PLE layer (``Qwen4ExpNGramEmbedding``): the rows of its
    (ngram_size - 1) x heads_per_ngram prime-sized slices, padded; ple_embed_dim / heads wide."""
    if not ple_ids:
        return ()
    order = t.int("ngram_size", minimum=2, maximum=_MAX_NGRAM, why="n-gram orders 2 to 16")
    heads = (order - 1) * t.int("heads_per_ngram", maximum=_MAX_HASH_HEADS, why="at most 1,024 hash heads")
    base = t.int("ngram_vocab_size_base")
    pad = t.int(
        "make_ngram_vocab_size_divisible_by", default=1, maximum=2**20, why="a padding multiple of 2^20 at most"
    )
    dim = t.int("ple_embed_dim", default=t.int("hidden_size"))
    if dim % heads:
        raise t.error(f"field 'ple_embed_dim' ({dim:,}) must divide into (ngram_size - 1) x heads_per_ngram = {heads}")
    distinct = sorted(set(ple_ids))
    slices = (max(ple_ids.index(layer) for layer in distinct) + 1) * heads
    if slices > _MAX_HASH_HEADS:
        raise t.error(
            f"fields 'ple_layer_ids' x (ngram_size - 1) x heads_per_ngram give {slices:,} prime-sized table slices; "
            f"at most {_MAX_HASH_HEADS:,} are sized"
        )
    dtype = t.str("dtype") or t.str("torch_dtype") or "bfloat16"
    if dtype not in _DTYPE_BYTES:
        raise t.error(
            f"field 'dtype' must be one of {', '.join(_DTYPE_BYTES)} (the n-gram table's storage), got {dtype!r}"
        )
    if dim // heads > 1_000_000:
        raise t.error(f"field 'ple_embed_dim' ({dim:,}) gives rows of {dim // heads:,} values; at most 1,000,000")
    if base * heads > 10**12:
        raise t.error(f"field 'ngram_vocab_size_base' ({base:,}) x {heads} hash heads exceeds 10^12 rows per table")
    primes, p = [], base - 1
    while len(primes) < slices:
        p += 1
        if _is_prime(p):
            primes.append(p)
    tables = []
    for layer in distinct:
        j = ple_ids.index(layer)  # transformers: ple_layer_index = ple_layer_ids.index(layer_idx + 1)
        rows = -(-sum(primes[j * heads : (j + 1) * heads]) // pad) * pad
        if rows > 10**12:
            raise t.error(f"field 'ngram_vocab_size_base' ({base:,}) gives {rows:,} rows per table; at most 10^12")
        tables.append(
            HostTable(
                name="n-gram (PLE)",
                rows=rows,
                row_width=dim // heads,
                row_bytes=dim // heads * _DTYPE_BYTES[dtype],
                rows_per_token=heads,
                layer_ids=(layer - 1,),
            )
        )
    return tuple(tables)


@reader("qwen4_exp", "qwen4_exp_text", archs=("Qwen4ExpForConditionalGeneration", "Qwen4ExpForCausalLM"))
def qwen4_exp(f: Fields) -> dict[str, Any]:
    t, c = text_common(f, "qwen4_exp")
    h, layers = c["hidden_size"], c["num_layers"]
    linear = _layer_kinds(t, layers)
    if len(linear) == layers:
        raise t.error("no sparse-attention layer: every layer is linear attention (at least one must cache K/V)")
    index_dim = t.int("indexer_head_dim", maximum=MAX_HEAD_DIM)
    t.int("indexer_kv_heads", default=1, maximum=1, why="Qwen4-Exp QSA has one index key head")
    qsa = QSA(
        **gqa_geometry(t, h),
        qk_norm=True,
        output_gate=t.bool("attn_output_gate", True),
        index_heads=t.int("indexer_n_heads", maximum=MAX_HEADS),
        index_head_dim=index_dim,
        topk_tokens=t.int("indexer_budget"),
        compress_ratio=t.int("indexer_compress_ratio"),
        raw_key_bytes=_BF16 * index_dim + _MROPE_POSITION_BYTES,
        pooled_key_bytes=_BF16 * index_dim,
        kv_cache_dtype=_QSA_KV_DTYPE,
    )
    gdn = gated_deltanet(t)
    hc = t.int("hc_count", default=4, maximum=64, why="at most 64 residual streams")
    rank = t.int("hc_lowrank")
    ple_ids = t.int_list("ple_layer_ids")
    if any(not 1 <= i <= layers for i in ple_ids):
        raise t.error(f"field 'ple_layer_ids' lists one-indexed layers, 1 to {layers}")
    ple = len(set(ple_ids)) * _ple_params(
        h, hc, t.int("ple_embed_dim", default=h), t.int("ple_conv_kernel_size", default=4)
    )
    shared = t.int("shared_expert_intermediate_size", default=0, minimum=0)
    c.update(
        mixers=group_layers(layers, lambda i: gdn if i in linear else qsa),
        dense_layers=(),
        moe=moe_spec(
            t,
            experts="num_experts",
            width="moe_intermediate_size",
            shared=1 if shared else 0,
            shared_width=shared,
            shared_expert_gate=bool(shared),
        ),
        norms_per_layer=0,  # the hyper-connections' grouped norms stand in for the layer norms
        residual_streams=hc,
        layer_extra_params=2 * _hc_params(h, hc, rank),
        model_extra_params=_hc_params(h, hc, rank, inject=False) + ple,
        num_mtp_layers=t.int("mtp_num_hidden_layers", default=0, minimum=0),
        extras=(LookupTables(tables=tables),) if (tables := _ngram_tables(t, ple_ids)) else (),
    )
    vc = f.cfg.get("vision_config")
    if isinstance(vc, Mapping) and vc:
        c["vision_params"] = qwen_vl_vision_params(vc)
    return c
