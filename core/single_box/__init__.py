"""One box with expert offload (llama.cpp --n-cpu-moe, ktransformers): placement and speed (offload), what fits (placement), options and upgrades (options), published single-box measurements (cases)."""

__all__: list[str] = []
