"""The result of placing a model on one box (:func:`core.single_box.offload.placement`): where its tensors go,
whether it fits, and how fast it decodes at batch 1.

``Placement`` lives here so that :mod:`core.single_box.offload` (which builds it) and :mod:`core.single_box.options` /
:mod:`core.single_box.cases` (which compare several) share it without importing each other at load time;
``core.single_box.offload.Placement`` still works.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["GB", "Placement"]

GB = 1e9


@dataclass(frozen=True)
class Placement:
    """Where a model's tensors go on one box, whether it fits, and how fast it runs (batch 1)."""

    kind: str  # "discrete" | "unified"
    model_id: str
    gpu_id: str | None
    n_gpus: int
    host_id: str
    precision: str
    context_len: int
    n_cpu_moe: int  # the llama.cpp flag value (layers counted from the first)
    offloaded_layers: int  # MoE layers whose routed experts are on the host
    gpu_weights_bytes: float
    gpu_routed_bytes: float  # the part of gpu_weights_bytes that is routed experts
    gpu_kv_bytes: float
    gpu_buffer_bytes: float
    gpu_capacity_bytes: float
    host_weights_bytes: float
    host_reserve_bytes: float
    host_capacity_bytes: float
    decode_gpu_s: float
    decode_host_s: float
    prefill_tokens_per_s: float
    prefill_path: str
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def gpu_non_routed_bytes(self) -> float:
        return self.gpu_weights_bytes - self.gpu_routed_bytes

    @property
    def gpu_total_bytes(self) -> float:
        return self.gpu_weights_bytes + self.gpu_kv_bytes + self.gpu_buffer_bytes

    @property
    def host_total_bytes(self) -> float:
        return self.host_weights_bytes + self.host_reserve_bytes

    @property
    def fits_gpu(self) -> bool:
        return self.gpu_total_bytes <= self.gpu_capacity_bytes

    @property
    def fits_host(self) -> bool:
        return self.host_total_bytes <= self.host_capacity_bytes

    @property
    def fits(self) -> bool:
        return self.fits_gpu and self.fits_host

    @property
    def decode_s_per_token(self) -> float:
        return self.decode_gpu_s + self.decode_host_s

    @property
    def decode_tokens_per_s(self) -> float:
        return 1.0 / self.decode_s_per_token

    @property
    def short_status(self) -> str:
        """``fits``, or the short side and by how much, in a few words (for tables)."""
        if self.fits:
            return "fits"
        parts = []
        if not self.fits_gpu:
            parts.append(f"GPU −{(self.gpu_total_bytes - self.gpu_capacity_bytes) / GB:,.1f} GB")
        if not self.fits_host:
            parts.append(f"RAM −{(self.host_total_bytes - self.host_capacity_bytes) / GB:,.0f} GB")
        return "short: " + ", ".join(parts)

    @property
    def status(self) -> str:
        """One line: fits, or what is short and by how much."""
        if self.fits:
            return "fits"
        parts = []
        where = "GPU" if self.kind == "discrete" else "GPU share of the pool"
        if not self.fits_gpu:
            parts.append(f"{where} short by {(self.gpu_total_bytes - self.gpu_capacity_bytes) / GB:,.1f} GB")
        if not self.fits_host:
            parts.append(
                f"host RAM short by {(self.host_total_bytes - self.host_capacity_bytes) / GB:,.1f} GB "
                "(llama.cpp would page experts from disk: seconds per token)"
            )
        return "does not fit: " + "; ".join(parts)
