"""The current-generation models (issues 20 and 22) that the page and browser tests run on 2 x 8 B200 in FP8.

The browser tour (tests/e2e/test_browser.py) draws every page of one model per architecture trait (TRAITS); the
others run every page that reads the model through AppTest (tests/page/test_current_generation_pages.py), so
`make test` stays within CI's 25 minutes on two cores (the whole list in the browser cost ~9 minutes)."""

CURRENT_GENERATION = [
    "deepseek-v4-flash",
    "deepseek-v4-pro",
    "qwen3.5-397b-a17b",
    "qwen3.5-122b-a10b",
    "qwen3.5-35b-a3b",
    "kimi-k2.5",
    "kimi-k3",
    "glm-5",
    "minimax-m3",
    "gemma-4-26b-a4b",
    "qwen3-coder-480b-a35b",
    "nemotron-3-super-120b-a12b",
    # late 2026 (issue 22)
    "deepseek-v4.1-flash",
    "qwen3.8-2.4t-a95b",
    "qwen3.8-flash-next",
    "qwen3.6-35b-a3b",
    "glm-5.2",
    "glm-5.3-flash",
    "hy3",
    "mimo-v2.5-pro",
    "kimi-k2.6",
    "kimi-k2.7-code",
    "nemotron-3-ultra-550b-a55b",
    "minimax-m2.5",
    "minimax-m2.7",
    "step-3.7-flash",
]

# the pages that drop the scenario's model in their prologue (tests/e2e/test_browser.py checks it): model tours skip them.
# Validation is not one of them: it times the scenario's model and calibrates it to one's benchmark results (issue 36)
MODEL_FREE_PAGES = {"pages/8_Catalog.py", "pages/9_Compare.py"}

CLUSTER = {"gpu": "b200", "nodes": "2", "gpn": "8", "w": "fp8"}

# one model per architecture trait the model families of the tour lack (the browser draws their charts)
TRAITS = {
    "deepseek-v4-pro": "compressed sparse attention, an MLA-style MTP mixer",
    "qwen3.5-397b-a17b": "linear-attention (gated DeltaNet) hybrid",
    "glm-5": "DeepSeek sparse attention (a lightning indexer picks the keys)",
    "gemma-4-26b-a4b": "sliding-window hybrid",
    "nemotron-3-super-120b-a12b": "Mamba hybrid",
    "deepseek-v4.1-flash": "an embedding table served from host memory (Engram)",
    "mimo-v2.5-pro": "three MTP layers with their own GQA mixer and dense FFN",
    "kimi-k3": "2.78T parameters: does not fit 16 GPUs with a cache (the no-fit paths)",
}
