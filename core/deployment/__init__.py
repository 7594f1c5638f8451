"""What is deployed: the scenario's value types (specs: Precision, Workload, ParallelLayout, SpecDecodeConfig, MemoryAssumptions, Scenario) and layout validity, default layouts and pipeline stages (parallel)."""

__all__: list[str] = []
