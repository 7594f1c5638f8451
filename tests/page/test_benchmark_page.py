"""The Layouts page shows the benchmark for its best decode plan under the launch commands (issue 36)."""

from tests.page._util import run_page


def test_layouts_page_shows_the_benchmark_with_the_planners_figures():
    at = run_page("pages/5_Layouts.py", timeout=120, model="deepseek-v3", gpu="h200", nodes="1")
    assert not at.exception
    codes = [c.value for c in at.code]
    assert any(c.startswith("vllm bench serve") and "--max-concurrency" in c for c in codes)
    assert any(c.startswith("python -m sglang.bench_serving") for c in codes)
    assert any(c.startswith("aiperf profile") for c in codes)
    assert any("Benchmark this plan" in m.value for m in at.markdown)
    assert any("output tokens/s per GPU" in m.value and "TPOT" in m.value for m in at.markdown)
