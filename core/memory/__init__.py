"""Memory: bytes per weight format, per component, the cache per sequence, per GPU under a layout, fit.

Units: bytes unless a name says otherwise; GB = 1e9 bytes. Formulas accept numpy arrays where a curve is
drawn (context lengths). Split by concern: :mod:`.formats` (dtypes and their scales), :mod:`.weights`
(per component, per GPU, drafts), :mod:`.kv` (cache and state per sequence, per GPU), :mod:`.budget` (per-GPU
budgets, fit, max sequences / context, min GPUs). Layout validity and pipeline stages live in
:mod:`core.deployment.parallel`, precision support in :mod:`core.hardware`: import them from there.
"""

from core.memory.budget import (
    MAX_CLUSTER_GPUS,
    MIN_GPU_PRECISIONS,
    GPUMemory,
    gpu_count_candidates,
    max_concurrent_sequences,
    max_context_len,
    min_gpus,
    min_gpus_table,
    per_gpu_memory,
    scenario_notes,
    stage_memories,
)
from core.memory.formats import (
    DTYPE_BYTES,
    GGUF_BLOCKS,
    WEIGHT_FORMATS,
    WeightFormat,
    bytes_per_param,
    dtype_bytes,
    gguf_bits_per_weight,
)
from core.memory.kv import (
    MAX_CONTEXT,
    cache_by_layer_type,
    cache_format,
    cache_split_note,
    decode_read_bytes_per_sequence,
    fixed_state_bytes_per_sequence,
    kv_bytes_per_sequence,
    kv_bytes_per_sequence_on_gpu,
    kv_bytes_per_token,
    kv_elements_per_token_per_layer,
    kv_per_token_note,
    linear_state_bytes_per_sequence,
    state_equivalent_tokens,
    state_layers,
)
from core.memory.weights import component_dtypes, draft_params, weight_bytes_by_component, weights_bytes

__all__ = [
    "DTYPE_BYTES",
    "GGUF_BLOCKS",
    "MAX_CLUSTER_GPUS",
    "MAX_CONTEXT",
    "MIN_GPU_PRECISIONS",
    "WEIGHT_FORMATS",
    "GPUMemory",
    "WeightFormat",
    "bytes_per_param",
    "cache_by_layer_type",
    "cache_format",
    "cache_split_note",
    "component_dtypes",
    "decode_read_bytes_per_sequence",
    "draft_params",
    "dtype_bytes",
    "fixed_state_bytes_per_sequence",
    "gguf_bits_per_weight",
    "gpu_count_candidates",
    "kv_bytes_per_sequence",
    "kv_bytes_per_sequence_on_gpu",
    "kv_bytes_per_token",
    "kv_elements_per_token_per_layer",
    "kv_per_token_note",
    "linear_state_bytes_per_sequence",
    "max_concurrent_sequences",
    "max_context_len",
    "min_gpus",
    "min_gpus_table",
    "per_gpu_memory",
    "scenario_notes",
    "stage_memories",
    "state_equivalent_tokens",
    "state_layers",
    "weight_bytes_by_component",
    "weights_bytes",
]
