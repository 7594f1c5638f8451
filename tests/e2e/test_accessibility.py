"""Accessibility and print in a real browser (issue 13, part 5).

- Light and dark: the app follows the browser's colour scheme (no theme pinned in .streamlit/config.toml);
  on chart-heavy pages the background really switches, every chart draws, and the charts' axis, legend, title
  and annotation text and rules keep their contrast on the page background.
- Greyscale: legends tell series apart by marker shape or dash pattern, not only by colour; greyscale
  screenshots of the Fit, Speculative, Balance and Layouts pages are written for review.
- Print: under print media the sidebar is hidden and the heading and charts stay visible inside the page;
  ``page.pdf`` gives a real PDF titled after the page.

Artifacts (test-artifacts/): theme_{dark,light}_<page>.png, grey_<page>.png, print_fit.png, print_fit.pdf,
print_report.pdf.
"""

from __future__ import annotations

import re

import pytest
from PIL import Image, ImageOps
from playwright.sync_api import expect

from tests.e2e.conftest import ARTIFACTS, wait_rendered

pytestmark = pytest.mark.e2e

SCENARIO = "model=deepseek-v3&gpu=h200&nodes=1&gpn=8&w=fp8"
CHART = "[data-testid='stVegaLiteChart']"
MARKS = f"{CHART} :is(svg.marks, canvas.marks)"
# legends whose swatches may differ by colour alone, and why: the segments carry their names and stack in
# legend order (memory; where the time goes, largest part first); the bands are an ordered ramp whose lightness
# rises with the value (speedup surface)
SAME_SWATCH_OK = ("Memory per GPU", "Speedup over", "Prefill: GPU time per", "Decode: GPU time per")


@pytest.fixture
def themed(new_page):
    """``themed(scheme)``: a page in a fresh context that prefers the given colour scheme."""
    return lambda scheme, height=3000: new_page(height=height, color_scheme=scheme)


def open_page(page, url: str) -> int:
    """Go to ``url`` and wait until the script has run, every chart has drawn and nothing is still a
    loading skeleton; returns the number of charts."""
    page.goto(url)
    wait_rendered(page)
    expect(page.locator(MARKS).first).to_be_visible(timeout=60_000)
    n = page.locator(CHART).count()
    expect(page.locator(MARKS)).to_have_count(n)
    expect(page.get_by_test_id("stSkeleton")).to_have_count(0)
    assert page.get_by_test_id("stException").count() == 0
    assert not page.errors, page.errors
    for box in (page.locator(MARKS).nth(i).bounding_box() for i in range(n)):
        assert box and box["width"] > 100 and box["height"] > 50, box
    return n


def luminance(css: str) -> float:
    r, g, b = (int(v) / 255 for v in re.findall(r"[\d.]+", css)[:3])
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(a: str, b: str) -> float:
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


# Every SVG chart's texts with their colour and the colour under them (the topmost bar / rect / area whose
# box holds the text's centre, blended by its opacity; else the chart background), its rules' strokes,
# and each legend's swatch signatures (symbol path and dash pattern).
_CHART_INK_JS = """(sel) => [...document.querySelectorAll(sel)].map(chart => {
  const svg = chart.querySelector('svg.marks');
  if (!svg) return null;
  const bg = getComputedStyle(svg).backgroundColor;
  const role = el => { const g = el.closest('g[class*="role-"]'); return g ? [...g.classList].find(c => c.startsWith('role-')) : ''; };
  const fills = [...svg.querySelectorAll('g.role-mark:is(.mark-rect, .mark-area) path')].map(p => {
    const cs = getComputedStyle(p);
    return {box: p.getBoundingClientRect(), fill: cs.fill, alpha: +cs.fillOpacity * +cs.opacity};
  }).filter(f => f.fill !== 'none' && f.alpha > 0);
  const under = t => {
    const b = t.getBoundingClientRect(), x = b.x + b.width / 2, y = b.y + b.height / 2;
    const hit = fills.filter(f => x >= f.box.left && x <= f.box.right && y >= f.box.top && y <= f.box.bottom).pop();
    return hit ? {fill: hit.fill, alpha: hit.alpha} : null;
  };
  const texts = [...svg.querySelectorAll('text')].filter(t => t.textContent.trim()).map(t => ({
    role: role(t), text: t.textContent, fill: getComputedStyle(t).fill, under: under(t) }));
  const rules = [...svg.querySelectorAll('g.mark-rule.role-mark line')].map(l => getComputedStyle(l).stroke);
  const legends = [...svg.querySelectorAll('g.role-legend')].map(lg =>
    [...lg.querySelectorAll('g.role-legend-symbol path')].map(p =>
      (p.getAttribute('d') || '') + '|' + (p.getAttribute('stroke-dasharray') || '')));
  const title = svg.querySelector('g.role-title-text text');
  return {title: title ? title.textContent : '', bg, texts, rules, legends};
}).filter(Boolean)"""


def _rgb(css: str) -> tuple[float, ...]:
    return tuple(float(v) for v in re.findall(r"[\d.]+", css)[:3])


def backdrop(text: dict, bg: str) -> str:
    """The colour behind a chart text: the mark under it blended over the background, or the background."""
    if not text["under"]:
        return bg
    a = min(1.0, text["under"]["alpha"])
    mix = [a * f + (1 - a) * b for f, b in zip(_rgb(text["under"]["fill"]), _rgb(bg), strict=True)]
    return "rgb({:.0f}, {:.0f}, {:.0f})".format(*mix)


@pytest.mark.parametrize("name", ["Fit", "Speculative", "Layouts"])
def test_light_and_dark_theme(server, themed, name):
    backgrounds = {}
    for scheme in ("light", "dark"):
        page = themed(scheme)
        open_page(page, f"{server.url}/{name}?{SCENARIO}")
        expect(page.get_by_test_id("stMain").get_by_role("heading", level=1)).to_contain_text(name)
        bg = page.evaluate("getComputedStyle(document.querySelector('[data-testid=stApp]')).backgroundColor")
        backgrounds[scheme] = bg
        if scheme == "dark":
            assert luminance(bg) < 0.05, f"dark scheme but the app background is {bg}"
        else:
            assert luminance(bg) > 0.9, f"light scheme but the app background is {bg}"
        # the charts follow the theme: their background is the app's; every text (axes, legends, titles, and
        # our labels on the plot or inside bars) and every rule contrasts with what is behind it
        charts = page.evaluate(_CHART_INK_JS, CHART)
        assert charts, "no SVG chart to check"
        for chart in charts:
            assert chart["bg"] == bg, (chart["title"], chart["bg"], bg)
            for t in chart["texts"]:
                assert contrast(t["fill"], backdrop(t, bg)) >= 3.0, (scheme, chart["title"], t)
            for stroke in chart["rules"]:
                assert contrast(stroke, bg) >= 3.0, (scheme, chart["title"], stroke)
        page.screenshot(path=str(ARTIFACTS / f"theme_{scheme}_{name.lower()}.png"), full_page=True)
    assert backgrounds["light"] != backgrounds["dark"]


@pytest.mark.parametrize("name", ["Fit", "Speculative", "Balance", "Layouts"])
def test_legends_read_in_greyscale(server, themed, name):
    page = themed("light")
    open_page(page, f"{server.url}/{name}?{SCENARIO}")
    for chart in page.evaluate(_CHART_INK_JS, CHART):
        for swatches in chart["legends"]:
            if len(swatches) > 1 and not chart["title"].startswith(SAME_SWATCH_OK):
                assert len(set(swatches)) == len(swatches), f"{chart['title']!r}: legend differs by colour only"
    shot = ARTIFACTS / f"grey_{name.lower()}.png"
    page.screenshot(path=str(shot), full_page=True)
    ImageOps.grayscale(Image.open(shot)).save(shot)


def _pdf_title(data: bytes) -> str:
    m = re.search(rb"/Title\s*<([0-9A-Fa-f]+)>", data)
    if m:
        raw = bytes.fromhex(m.group(1).decode())
        return raw[2:].decode("utf-16-be") if raw.startswith(b"\xfe\xff") else raw.decode("latin-1")
    m = re.search(rb"/Title\s*\((.*?)\)", data)
    return m.group(1).decode("latin-1") if m else ""


def _check_pdf(path, title: str) -> None:
    data = path.read_bytes()
    assert data.startswith(b"%PDF-"), data[:8]
    assert len(data) > 20_000, len(data)
    assert _pdf_title(data) == f"{title} · MoE Deployment Planner"
    assert data.count(b"/Type /Page") - data.count(b"/Type /Pages") >= 1


# the printable width of A4 landscape with the print CSS's 10 mm margins, in CSS pixels (96 per inch)
A4_LANDSCAPE_PX = round((297 - 20) / 25.4 * 96)


def _print_pdf(page, path) -> None:
    path.unlink(missing_ok=True)
    # the page's own @page rule (ui.scenario: landscape, 10 mm margins) decides orientation and margins
    page.pdf(path=str(path), format="A4", print_background=True, prefer_css_page_size=True)


def test_print_fit_page_to_pdf(server, themed):
    page = themed("light", height=1200)
    n = open_page(page, f"{server.url}/Fit")  # the default scenario
    page.emulate_media(media="print")
    heading = page.get_by_test_id("stMain").get_by_role("heading", name="Fit", exact=True)
    expect(heading).to_be_visible()
    expect(page.get_by_test_id("stSidebar")).to_be_hidden()
    expect(page.get_by_test_id("stHeader")).to_be_hidden()
    main = page.get_by_test_id("stMain").bounding_box()
    assert main["x"] < 40 and main["width"] > 1400, main  # the sidebar's width went to the content
    # at the paper's width the charts redraw to fit it, heading first, nothing cut off on the right
    page.set_viewport_size({"width": A4_LANDSCAPE_PX, "height": 1200})
    page.wait_for_function(
        """([sel, w]) => { const c = [...document.querySelectorAll(sel)];
                           return c.length > 0 && c.every(e => e.getBoundingClientRect().right <= w + 1); }""",
        arg=[MARKS, A4_LANDSCAPE_PX],
    )
    charts = page.locator(MARKS)
    expect(charts).to_have_count(n)
    head = heading.bounding_box()
    for i in range(n):
        expect(charts.nth(i)).to_be_visible()
        box = charts.nth(i).bounding_box()
        assert box["width"] > 0.8 * A4_LANDSCAPE_PX and box["height"] > 80 and box["y"] > head["y"], box
    page.screenshot(path=str(ARTIFACTS / "print_fit.png"), full_page=True)
    pdf = ARTIFACTS / "print_fit.pdf"
    _print_pdf(page, pdf)
    _check_pdf(pdf, "Fit")


def test_print_report_page_to_pdf(server, themed):
    page = themed("light", height=1200)
    page.goto(f"{server.url}/Report?{SCENARIO}")
    wait_rendered(page)
    expect(page.get_by_role("button", name="Download HTML report")).to_be_visible(timeout=60_000)
    expect(page.get_by_test_id("stSkeleton")).to_have_count(0)
    assert page.get_by_test_id("stException").count() == 0
    page.emulate_media(media="print")
    expect(page.get_by_test_id("stMain").get_by_role("heading", name="Report", exact=True)).to_be_visible()
    expect(page.get_by_test_id("stSidebar")).to_be_hidden()
    pdf = ARTIFACTS / "print_report.pdf"
    _print_pdf(page, pdf)
    _check_pdf(pdf, "Report")
