"""House rules of the code (issue 17, item 6), checked on the tree:

* imports go one way, ``pages -> ui -> core -> catalogs``: core never imports streamlit, altair, pandas, ui or
  pages; ui never imports pages nor opens catalog files; pages build no charts themselves (no altair); the command
  line (``cli/``) imports core and ui.report's Streamlit-free renderers, never Streamlit, and nothing imports it;
* no private name (``_x``) is imported from another module;
* no core module's ``__all__`` (a package's face included) lists a name another core package defines: no
  re-export shims; a caller imports a name from the package that defines it;
* nothing outside ``core/model`` and the config readers (``core/hf``) names a mixer kind (its class, or its kind
  string in a comparison such as ``.kind == "qsa"``); the list is read from the registry (``MIXER_KINDS`` and every
  ``Mixer`` subclass): every other module sums over ``model.mixers`` through the Mixer interface; likewise no
  module there names a model-level extra kind (``EXTRA_KINDS``, every ``ModelExtra`` subclass and the parts its
  file defines): every other module sums over ``model.extras`` through the ModelExtra interface;
* ``core`` is grouped by package, each on a floor (``CORE_FLOORS``): a package imports only from its own floor's
  packages' lower floors, never up, so no circle runs across packages;
* no module over 400 lines, except the allow-list below, which may only shrink;
* ruff's lint and formatter pass.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CODE = sorted(
    [
        *ROOT.glob("core/**/*.py"),
        *ROOT.glob("ui/**/*.py"),
        *ROOT.glob("cli/*.py"),
        *ROOT.glob("pages/*.py"),
        ROOT / "app.py",
    ]
)
MAX_LINES = 400
# module -> (its length when allowed, why it has not been split): a module may shrink, never grow past its
# entry; an entry whose module is back under the limit must go.
ALLOWED_LONG: dict[str, tuple[int, str]] = {}


def _rel(p: Path) -> str:
    return p.relative_to(ROOT).as_posix()


def _imports(p: Path) -> list[tuple[str, list[str], int]]:
    """(module, imported names, line) of every import in a file, at any depth (lazy imports too)."""
    tree = ast.parse(p.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, [], node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.module, [a.name for a in node.names], node.lineno))
    return out


def _top(module: str) -> str:
    return module.split(".")[0]


@pytest.mark.parametrize("path", [p for p in CODE if _rel(p).startswith("core/")], ids=_rel)
def test_core_imports_no_ui_framework_and_nothing_above_it(path):
    bad = [(m, line) for m, _, line in _imports(path) if _top(m) in ("streamlit", "altair", "pandas", "ui", "pages")]
    assert not bad, f"{_rel(path)} imports {bad}: core stays pure (DESIGN.md)"


@pytest.mark.parametrize("path", [p for p in CODE if _rel(p).startswith("ui/")], ids=_rel)
def test_ui_imports_no_page_and_reads_no_catalog_file(path):
    bad = [(m, line) for m, _, line in _imports(path) if _top(m) == "pages"]
    assert not bad, f"{_rel(path)} imports a page: {bad}"
    text = path.read_text(encoding="utf-8")
    assert "catalogs/" not in text and "CATALOG_DIR" not in text, (
        f"{_rel(path)} opens catalog files: go through core.catalog"
    )


# The command line (cli/, the moe-planner console script) is not Streamlit glue: it imports core and, for its Markdown
# and HTML reports, only these Streamlit-free renderers of ui (charts as Vega-Lite specs through vl-convert).
CLI_UI_ALLOWED = {"ui.report": "render_markdown / render_html: the report as Markdown or a self-contained HTML page"}


@pytest.mark.parametrize("path", [p for p in CODE if _rel(p).startswith("cli/")], ids=_rel)
def test_the_cli_imports_core_not_streamlit_nor_ui(path):
    bad = [
        (m, line)
        for m, _, line in _imports(path)
        if _top(m) in ("streamlit", "pages") or (_top(m) == "ui" and m not in CLI_UI_ALLOWED)
    ]
    assert not bad, f"{_rel(path)} imports {bad}: the command line stands on core (and ui.report's renderers)"


def test_the_cli_and_its_report_renderers_load_no_streamlit():
    """What the CLI imports, the allowed ui renderers included, pulls in no Streamlit, however indirectly."""
    code = (
        "import sys, cli.main, "
        + ", ".join(CLI_UI_ALLOWED)
        + "; print(sorted(m for m in sys.modules if m == 'streamlit' or m.startswith('streamlit.')))"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "[]", f"the command line loads Streamlit: {r.stdout[:500]}"


def test_nothing_imports_the_cli():
    bad = [(_rel(p), m) for p in CODE if not _rel(p).startswith("cli/") for m, _, _ in _imports(p) if _top(m) == "cli"]
    assert not bad, f"the command line is a leaf (it imports core; nothing imports it): {bad}"


@pytest.mark.parametrize("path", [p for p in CODE if _rel(p).startswith("pages/") or p.name == "app.py"], ids=_rel)
def test_pages_build_no_charts(path):
    bad = [(m, line) for m, _, line in _imports(path) if _top(m) == "altair"]
    assert not bad, f"{_rel(path)} imports altair {bad}: chart builders live in ui/charts"


@pytest.mark.parametrize("path", CODE, ids=_rel)
def test_no_private_name_is_imported_from_another_module(path):
    bad = [
        (m, n, line)
        for m, names, line in _imports(path)
        if _top(m) in ("core", "ui")
        for n in names
        if n.startswith("_") and not n.startswith("__")
    ]
    assert not bad, f"{_rel(path)} imports private names {bad}: make them public where they are defined"


def _defined_in(module, name: str) -> str | None:
    """The module that defines ``module.name``: a class's or function's ``__module__``; for any other object (a
    constant, an instance, whose ``__module__`` would be its class's) the module it is imported from, if any."""
    obj = getattr(module, name)
    if inspect.isclass(obj) or inspect.isroutine(obj):
        return getattr(obj, "__module__", None)
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if any((a.asname or a.name) == name for a in node.names):
                return node.module
    return module.__name__


def _core_modules() -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages([str(ROOT / "core")], "core."))


# Names a module may list although another core package defines them. Empty: DESIGN.md's public API paths
# (core.memory.min_gpus, core.roofline.*, core.moe.*, core.validation.predict, core.catalog.load_catalog, ...) are
# all defined in the package they are reached through, so none needs an exception. An entry needs a reason.
ALLOWED_REEXPORTS: dict[tuple[str, str], str] = {}


@pytest.mark.parametrize("module_name", _core_modules())
def test_no_core_module_re_exports_another_packages_name(module_name):
    module = importlib.import_module(module_name)
    own = _core_package(module_name)
    bad = {
        name: src
        for name in getattr(module, "__all__", ())
        if (src := _defined_in(module, name))
        and src.split(".")[0] == "core"
        and _core_package(src) != own
        and (module_name, name) not in ALLOWED_REEXPORTS
    }
    assert not bad, f"{module_name}'s __all__ hands on names other core packages define (import them from there): {bad}"


def test_the_re_export_guard_catches_a_shim(tmp_path):
    import types

    shim = types.ModuleType("core.memory._shim")
    shim.__file__ = str(tmp_path / "shim.py")
    (tmp_path / "shim.py").write_text("from core.model.dtypes import DTYPES\nfrom core.hardware import GPUSpec\n")
    from core.hardware import GPUSpec
    from core.model.dtypes import DTYPES

    shim.DTYPES, shim.GPUSpec, shim.own = DTYPES, GPUSpec, 1
    assert _defined_in(shim, "GPUSpec") == "core.hardware.gpu"
    assert _defined_in(shim, "DTYPES") == "core.model.dtypes"
    assert _defined_in(shim, "own") == "core.memory._shim"


def _kind_registry(base: type, kinds: dict[str, type]) -> tuple[set[type], frozenset[str]]:
    """(every subclass of ``base``, abstract ones included, and every registered kind's class; the kind strings)."""
    classes, todo = set(), list(base.__subclasses__())
    while todo:
        cls = todo.pop()
        classes.add(cls)
        todo.extend(cls.__subclasses__())
    return classes | set(kinds.values()), frozenset(kinds)


def _mixer_registry() -> tuple[frozenset[str], frozenset[str]]:
    """(class names, kind strings) of every token mixer, read from the registry itself (``MIXER_KINDS`` and every
    subclass of ``Mixer``, abstract ones such as ``LinearMixer`` included), so a new kind is guarded the day its
    file lands. ``Indexer`` (a part some mixers own) and the registry's own names are guarded with them."""
    from core.model.mixers import MIXER_KINDS, Indexer, Mixer

    classes, kinds = _kind_registry(Mixer, MIXER_KINDS)
    names = {c.__name__ for c in classes} | {Indexer.__name__, "MIXER_KINDS", "MixerSpec"}
    return frozenset(names), kinds


def _extra_registry() -> tuple[frozenset[str], frozenset[str]]:
    """(class names, kind strings) of every model-level extra, read from its registry (``EXTRA_KINDS`` and every
    subclass of ``ModelExtra``), with the parts a kind's own file defines (``HostTable``, the rows of the
    lookup-table extra) and the registry's own names."""
    from pydantic import BaseModel

    from core.model.extras import EXTRA_KINDS, ModelExtra

    classes, kinds = _kind_registry(ModelExtra, EXTRA_KINDS)
    parts = {
        obj
        for cls in classes
        for obj in vars(sys.modules[cls.__module__]).values()
        if inspect.isclass(obj) and issubclass(obj, BaseModel) and obj.__module__ == cls.__module__
    }
    names = {c.__name__ for c in classes | parts} | {"EXTRA_KINDS", "ExtraSpec"}
    return frozenset(names), kinds


MIXER_CLASSES, MIXER_KIND_NAMES = _mixer_registry()
EXTRA_CLASSES, EXTRA_KIND_NAMES = _extra_registry()


def _mixer_kind_comparisons(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, literal) of every comparison with a string that names a mixer kind or a mixer class
    (``m.kind == "qsa"``, ``m.kind in ("gqa", "mla")``, ``type(m).__name__ == "QSA"``) and every ``case "qsa":``."""
    return _kind_comparisons(tree, MIXER_KIND_NAMES | MIXER_CLASSES)


def _kind_comparisons(tree: ast.AST, words: frozenset[str]) -> list[tuple[int, str]]:
    """(line, literal) of every comparison with a string in ``words``, and every ``case`` on one."""

    def literals(node: ast.AST) -> list[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return [v for e in node.elts for v in literals(e)]
        return []

    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            out += [(node.lineno, v) for side in (node.left, *node.comparators) for v in literals(side) if v in words]
        elif isinstance(node, ast.MatchValue):
            out += [(node.lineno, v) for v in literals(node.value) if v in words]
    return out


def test_the_mixer_guard_knows_every_registered_kind():
    """The guard below is built from the registry: every kind's class, the newest included, is in it."""
    from core.model.mixers import MIXER_KINDS

    assert {c.__name__ for c in MIXER_KINDS.values()} <= MIXER_CLASSES
    assert {"QSA", "CSA2Attention", "V4Attention", "LinearMixer", "GQA"} <= MIXER_CLASSES
    assert {"qsa", "dsv41_csa2", "gqa", "mla"} <= MIXER_KIND_NAMES


@pytest.mark.parametrize(
    "src",
    [
        'if model.head_mixer.kind == "qsa":\n    pass',
        'x = "gqa" != layer.mixer.kind',
        'ok = m.kind in ("gqa", "mla")',
        'ok = m.kind not in ["dsv41_csa2"]',
        'if type(m).__name__ == "CSA2Attention":\n    pass',
        'match m.kind:\n    case "mamba2":\n        pass',
    ],
)
def test_the_mixer_guard_catches_a_kind_branch(src):
    """The hole design review 3 found (a ``.kind == "qsa"`` branch in perf left the guard green) is closed."""
    assert _mixer_kind_comparisons(ast.parse(src))


def test_the_mixer_guard_lets_other_kinds_pass():
    src = 'a = spec.kind == "mtp"\nb = host.kind in ("unified", "discrete")\nc = name == "gqa_like"'
    assert _mixer_kind_comparisons(ast.parse(src)) == []


@pytest.mark.parametrize("path", [p for p in CODE if not _rel(p).startswith(("core/model/", "core/hf/"))], ids=_rel)
def test_only_the_model_and_its_readers_name_mixer_kinds(path):
    """Adding a mixer kind touches its own file, its config reader and its tests: no other module may name
    one's class, compare ``.kind`` (or any string) with a kind, or import ``core.model.mixers``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    named = sorted(
        {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in MIXER_CLASSES}
        | {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr in MIXER_CLASSES}
    )
    imported = [m for m, _, _ in _imports(path) if m.startswith("core.model.mixers")]
    compared = _mixer_kind_comparisons(tree)
    assert not named and not imported and not compared, (
        f"{_rel(path)} names mixer kinds: {named or imported or [f'line {n}: {v!r}' for n, v in compared]}; "
        "sum over model.mixers through the Mixer interface instead"
    )


def test_the_extra_guard_knows_every_registered_kind():
    """The extras' guard is built from their registry: every kind's class and the parts its file defines."""
    from core.model.extras import EXTRA_KINDS

    assert {c.__name__ for c in EXTRA_KINDS.values()} <= EXTRA_CLASSES
    assert {"LookupTables", "HostTable", "CausalEncoder"} <= EXTRA_CLASSES and "ModelExtra" not in EXTRA_CLASSES
    assert {"lookup_tables", "causal_encoder"} <= EXTRA_KIND_NAMES


@pytest.mark.parametrize(
    "src",
    [
        'if any(e.kind == "causal_encoder" for e in model.extras):\n    pass',
        'ok = e.kind in ("lookup_tables",)',
        'if type(e).__name__ == "LookupTables":\n    pass',
        'match e.kind:\n    case "causal_encoder":\n        pass',
    ],
)
def test_the_extra_guard_catches_a_kind_branch(src):
    assert _kind_comparisons(ast.parse(src), EXTRA_KIND_NAMES | EXTRA_CLASSES)


def test_the_extra_guard_lets_step_components_pass():
    """``"host_tables"`` names the step's component (the tables' exposed reads), not an extra kind."""
    src = 'a = "host_tables" in parts\nb = tier == "gpu"'
    assert _kind_comparisons(ast.parse(src), EXTRA_KIND_NAMES | EXTRA_CLASSES) == []


@pytest.mark.parametrize("path", [p for p in CODE if not _rel(p).startswith(("core/model/", "core/hf/"))], ids=_rel)
def test_only_the_model_and_its_readers_name_extra_kinds(path):
    """Adding a model-level extra (off-GPU tables, a causal encoder) touches its own file, its config reader and its
    tests: every other module sums over ``model.extras`` through the ModelExtra interface (``model.lookups``,
    ``model.extra_bytes``, ``model.token_share`` ...), never naming a kind, comparing with one, or importing
    ``core.model.extras``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    named = sorted(
        {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in EXTRA_CLASSES}
        | {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr in EXTRA_CLASSES}
        | {a for _, names, _ in _imports(path) for a in names if a in EXTRA_CLASSES}
    )
    imported = [m for m, _, _ in _imports(path) if m.startswith("core.model.extras")]
    compared = _kind_comparisons(tree, EXTRA_KIND_NAMES | EXTRA_CLASSES)
    assert not named and not imported and not compared, (
        f"{_rel(path)} names model extra kinds: {named or imported or [f'line {n}: {v!r}' for n, v in compared]}; "
        "sum over model.extras through the ModelExtra interface instead"
    )


# The packages of core from the ground up (DESIGN.md draws them). A package may import from any package on a
# lower floor, never from its own floor or above (so no circle runs between packages); a module inside a package
# imports its siblings freely. Function-level imports count too.
CORE_FLOORS: tuple[tuple[str, ...], ...] = (
    ("_util",),
    ("model", "comms"),
    ("hf", "hardware"),
    ("deployment",),
    ("catalog", "store"),
    ("memory", "roofline"),
    ("perf", "single_box"),
    ("moe", "speculative", "balance"),
    ("serving",),
    ("scenario", "validation"),
    ("report",),
)
_FLOOR = {pkg: i for i, floor in enumerate(CORE_FLOORS) for pkg in floor}


def _core_package(module: str) -> str:
    """``core.perf.step`` -> ``perf``; ``core.catalog`` -> ``catalog``."""
    return module.split(".")[1] if module.count(".") else module


def _core_imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.split(".")[0] == "core":
            names = [f"core.{a.name}" for a in node.names] if node.module == "core" else [node.module]
            out += [(node.lineno, n) for n in names]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "core"]
    return out


def test_every_core_package_has_a_floor():
    found = {p.name for p in (ROOT / "core").iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    found |= {p.stem for p in (ROOT / "core").glob("*.py") if p.stem != "__init__"}
    assert found == set(_FLOOR), (
        f"packages without a floor: {sorted(found - set(_FLOOR))}; gone: {sorted(set(_FLOOR) - found)}"
    )


@pytest.mark.parametrize("path", sorted(ROOT.glob("core/**/*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_core_packages_import_only_downward(path):
    rel = path.relative_to(ROOT).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    if len(parts) < 2:
        return  # core/__init__.py
    own = parts[1]
    bad = [
        f"line {line}: {mod} ({_core_package(mod)}, floor {_FLOOR[_core_package(mod)]})"
        for line, mod in _core_imports(path)
        if _core_package(mod) != own and _FLOOR[_core_package(mod)] >= _FLOOR[own]
    ]
    assert not bad, f"{own} (floor {_FLOOR[own]}) imports from its own floor or above: {bad}"


def test_modules_stay_under_400_lines():
    lengths = {_rel(p): len(p.read_text(encoding="utf-8").splitlines()) for p in CODE}
    over = {m: n for m, n in lengths.items() if n > MAX_LINES and m not in ALLOWED_LONG}
    assert not over, f"modules over {MAX_LINES} lines (split them, or allow them with a reason): {over}"
    grew = {m: (lengths.get(m), cap) for m, (cap, _) in ALLOWED_LONG.items() if lengths.get(m, 0) > cap}
    assert not grew, f"allowed long modules may only shrink: {grew}"
    done = [m for m in ALLOWED_LONG if lengths.get(m, 0) <= MAX_LINES]
    assert not done, f"back under {MAX_LINES} lines: remove from ALLOWED_LONG {done}"


def _ruff() -> list[str]:
    exe = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if exe is None:
        pytest.fail("ruff is not installed: `make test` installs the test extras, which include it")
    return [exe]


def test_ruff_lint_passes():
    r = subprocess.run([*_ruff(), "check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


def test_ruff_format_is_applied():
    r = subprocess.run([*_ruff(), "format", "--check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, "run `ruff format .`:\n" + r.stdout[-4000:]
