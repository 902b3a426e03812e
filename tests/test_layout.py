"""Layout of the package (issues 23 and 37): who may import whom is a contract in setup.cfg,
checked by import-linter; this module runs it, and keeps what import-linter cannot state.

- **The contract** (setup.cfg, ``[importlinter:contract:...]``): imports go one way,
  ``cli -> figures -> studies -> engines -> theory`` with ``cli -> benchmarks -> engines`` and
  ``runtime`` (and the statistics, ``analysis``) below the studies and the engines; the public API
  neither draws nor benchmarks; nothing imports the package roots; no cycles. ``lint-imports``
  reads every import statement, at module level and in functions, and every chain of them.
  It builds its graph from the folder of the package ``patchassoc``, while the repository maps
  ``theory/``, ``simulations/``, ``figures/`` and ``benchmarks/`` into it (setup.cfg
  ``package_dir``), so :func:`installed_copy` writes the package as it installs (with
  setup.cfg beside it) and ``lint-imports`` runs there, in a few seconds.
- **What import-linter cannot state**, parsed here with :mod:`ast` (never imported): the
  project's own code loaded by a string (``importlib.import_module``, ``__import__``: not an
  import statement, so not in its graph); two modules with one file name; and a module that no
  contract places (its exhaustive option needs the layers to share one parent package).

The tests feed the same checks small synthetic trees made to fail and see each fault named.
By hand: ``python tests/test_layout.py`` runs lint-imports on the tree and prints its report.
"""
from __future__ import annotations

import ast
import configparser
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Used when a root has no setup.cfg (the synthetic trees of the tests below).
DEFAULT_PACKAGE_DIR = {
    "patchassoc": "patchassoc",
    "patchassoc.theory": "theory",
    "patchassoc.simulations": "simulations",
    "patchassoc.figures": "figures",
    "patchassoc.benchmarks": "benchmarks",
}

#: Where ``importlib.import_module`` may load the project's own code: the lazy ``__getattr__``
#: re-exports of a package's own submodules (relative names, one dot). They are allowed because
#: they keep ``import patchassoc`` (and the optional PyTorch part of the ViT engine) cheap: the
#: submodule is loaded on first use of one of its names, and a relative name can only reach the
#: package's own submodules, so no arrow of the layering is hidden by them.
LAZY_LOADERS = {"patchassoc", "patchassoc.simulations.engines.vit"}

_LOADERS = {"import_module", "__import__"}
_CONTRACT = "importlinter:contract:"


# -- reading the tree -----------------------------------------------------------------------------
def _config(root: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser()
    parser.read(Path(root) / "setup.cfg")
    return parser


def package_dir(root: Path) -> dict[str, str]:
    out = {}
    for line in _config(root).get("options", "package_dir", fallback="").splitlines():
        if "=" in line:
            name, folder = (s.strip() for s in line.split("=", 1))
            out[name] = folder
    return out or dict(DEFAULT_PACKAGE_DIR)


def modules(root: Path) -> dict[str, Path]:
    """Dotted name -> source file of every module under the package folders."""
    root = Path(root)
    folders = {name: (root / folder).resolve() for name, folder in package_dir(root).items()}
    out: dict[str, Path] = {}
    for name, folder in folders.items():
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(folder)
            if "__pycache__" in rel.parts:
                continue
            # a file under a nested mapped folder belongs to that package
            owner = max((n for n, f in folders.items() if path.is_relative_to(f)),
                        key=lambda n: len(folders[n].parts))
            if owner != name:
                continue
            parts = list(rel.with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join([name, *parts])] = path
    return out


def _where(path: Path, root: Path, line: int) -> str:
    try:
        path = path.relative_to(Path(root).resolve())
    except ValueError:
        pass
    return f"{path}:{line}"


def _ours(name: str) -> bool:
    return name == "patchassoc" or name.startswith("patchassoc.")


# -- the contract, run by import-linter -----------------------------------------------------------
def installed_copy(root: Path, dest: Path) -> Path:
    """Write the package under ``dest`` as it installs (``dest/patchassoc/theory/...``), with the
    root's setup.cfg beside it, so that ``lint-imports`` run in ``dest`` sees every module."""
    for module, path in modules(root).items():
        target = Path(dest, *module.split("."))
        target = target / "__init__.py" if path.name == "__init__.py" else target.with_suffix(".py")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    shutil.copyfile(Path(root) / "setup.cfg", Path(dest) / "setup.cfg")
    return Path(dest)


def _lint_imports_command() -> str:
    found = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which(
        "lint-imports")
    if found is None:
        pytest.fail("lint-imports not found: it is in the test extra "
                    "(pip install -e '.[test,docs]', the README's test command)", pytrace=False)
    return found


def lint_imports(root: Path, work: Path, *args: str) -> subprocess.CompletedProcess:
    """``lint-imports`` on the package of ``root`` (its contracts: ``root``'s setup.cfg)."""
    copy = installed_copy(root, Path(work) / "installed")
    return subprocess.run([_lint_imports_command(), "--no-logo", "--no-cache", *args], cwd=copy,
                          capture_output=True, text=True, timeout=300)


def contract_names(root: Path) -> dict[str, str]:
    cfg = _config(root)
    return {s[len(_CONTRACT):]: cfg[s]["name"] for s in cfg.sections() if s.startswith(_CONTRACT)}


def _listed(value: str) -> list[str]:
    """The module names of a contract field: one per line, a layer's parts split on | or :,
    an optional one's parentheses dropped."""
    return [part.strip().strip("()") for line in value.splitlines()
            for part in re.split(r"[|:]", line) if part.strip()]


def unplaced_modules(root: Path) -> list[str]:
    """Modules in no layer of the layers contract and not one of the package roots that the
    contracts name on their own (import-linter checks only the modules a contract names)."""
    cfg = _config(root)
    layers = _listed(cfg[f"{_CONTRACT}layers"]["layers"])
    roots = set(_listed(cfg[f"{_CONTRACT}package-roots"]["protected_modules"]))
    return sorted(m for m in modules(root) if m not in roots
                  and not any(m == layer or m.startswith(layer + ".") for layer in layers))


# -- what import-linter cannot state --------------------------------------------------------------
class _LoaderCalls(ast.NodeVisitor):
    """Every call to ``import_module`` / ``__import__``, with the functions around it."""

    def __init__(self):
        self.calls: list[tuple[ast.Call, list[str]]] = []
        self._functions: list[str] = []

    def visit_FunctionDef(self, node):
        self._functions.append(node.name)
        self.generic_visit(node)
        self._functions.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        self._functions.append("<lambda>")
        self.generic_visit(node)
        self._functions.pop()

    def visit_Call(self, node):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name in _LOADERS:
            self.calls.append((node, list(self._functions)))
        self.generic_visit(node)


def _strings(node) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant)
            and isinstance(n.value, str)]


def _module_literals(tree: ast.Module) -> dict[str, list[str]]:
    """Module-level names bound to literals, with the strings in them."""
    out = {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) and node.value else [])
        for t in targets:
            if isinstance(t, ast.Name):
                out[t.id] = _strings(node.value)
    return out


def _loop_source(tree, call, name):
    """The iterable of a ``for name in ...`` (statement or comprehension) around ``call``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.For):
            loops = [node]
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            loops = node.generators
        else:
            continue
        for loop in loops:
            if (isinstance(loop.target, ast.Name) and loop.target.id == name
                    and any(n is call for n in ast.walk(node))):
                return loop.iter
    return None


def string_load_violations(root: Path) -> list[str]:
    """``importlib.import_module`` or ``__import__`` given a string that names a ``patchassoc``
    module, resolved as far as the source allows: a literal; a name looped over a module-level
    literal; otherwise (a parameter, a computed value) any ``patchassoc`` module named by a string
    in the file. Allowed: a relative name with one dot inside ``__getattr__`` of a package in
    ``LAZY_LOADERS``."""
    files = modules(root)
    out = []
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        visitor = _LoaderCalls()
        visitor.visit(tree)
        literals = _module_literals(tree)
        in_file = sorted({s for s in _strings(tree) if _ours(s) and s in files})
        for call, functions in visitor.calls:
            where = _where(path, root, call.lineno)
            arg = call.args[0] if call.args else next(
                (k.value for k in call.keywords if k.arg == "name"), None)
            if arg is None:
                continue
            relative = (isinstance(arg, ast.Constant) and isinstance(arg.value, str)
                        and arg.value.startswith(".")) or (
                isinstance(arg, ast.JoinedStr) and arg.values
                and isinstance(arg.values[0], ast.Constant) and arg.values[0].value.startswith("."))
            if relative:
                first = arg.value if isinstance(arg, ast.Constant) else arg.values[0].value
                allowed = (module in LAZY_LOADERS and functions[-1:] == ["__getattr__"]
                           and path.name == "__init__.py" and not first.startswith(".."))
                if not allowed:
                    out.append(f"{where}: {module} loads a relative module by string "
                               f"({ast.unparse(arg)}) outside a lazy __getattr__ re-export")
                continue
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                names = [arg.value]
            elif isinstance(arg, ast.JoinedStr):
                names = ["".join(_strings(arg))]
            elif isinstance(arg, ast.Name) and arg.id in literals:
                names = literals[arg.id]
            elif isinstance(arg, ast.Name) and (src := _loop_source(tree, call, arg.id)) is not None:
                names = (literals.get(src.id, in_file) if isinstance(src, ast.Name)
                         else _strings(src) or in_file)
            else:
                names = in_file
            named = sorted({n for n in names if _ours(n)})
            if named:
                shown = ", ".join(named[:4]) + (f", ... ({len(named)} in all)"
                                                if len(named) > 4 else "")
                out.append(f"{where}: {module} loads by string "
                           f"importlib.{ast.unparse(call.func).split('.')[-1]}"
                           f"({ast.unparse(arg)}): {shown}")
    return sorted(out)


def duplicate_name_violations(root: Path) -> list[str]:
    """Two modules of the package with the same file name (``__init__.py`` apart)."""
    by_name = defaultdict(list)
    for module, path in modules(root).items():
        if path.name != "__init__.py":
            by_name[path.name].append(module)
    return [f"{name}: {', '.join(sorted(mods))}" for name, mods in sorted(by_name.items())
            if len(mods) > 1]


def _bound_names(tree: ast.Module, package: str) -> dict[str, int]:
    """Names a module binds at its top level to something other than one of its submodules
    (``from .part import part`` binds the function, not the module), with their lines."""
    out = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[node.name] = node.lineno
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Name):
                    out[target.id] = node.lineno
        elif (isinstance(node, ast.ImportFrom) and node.module and node.level == 0
              and node.module != package):  # from X.part import name (not: from package import part)
            for alias in node.names:
                out[alias.asname or alias.name] = node.lineno
    return out


def shadowed_submodule_violations(root: Path) -> list[str]:
    """A package whose ``__init__`` binds a submodule's name to something else: after it,
    ``from package import part`` gives that object, and ``monkeypatch.setattr(part, ...)`` or
    ``part.name`` reaches the wrong thing."""
    files = modules(root)
    out = []
    for module, path in files.items():
        if path.name != "__init__.py":
            continue
        subs = {m[len(module) + 1:] for m in files
                if m.startswith(module + ".") and "." not in m[len(module) + 1:]}
        bound = _bound_names(ast.parse(path.read_text()), module)
        for name in sorted(subs & set(bound)):
            out.append(f"{module}.{name}: the package's __init__ (line {bound[name]}) binds "
                       f"{name!r} to something other than its submodule")
    return out


def unlisted_packages(root: Path) -> list[str]:
    """Folders with an ``__init__.py`` under the package folders that ``setup.cfg``'s
    ``packages`` leaves out: the wheel would not hold them."""
    cfg = configparser.ConfigParser()
    cfg.read(Path(root) / "setup.cfg")
    listed = set(cfg.get("options", "packages", fallback="").split())
    files = modules(root)
    return sorted(m for m, path in files.items()
                  if path.name == "__init__.py" and m not in listed)


CHECKS = {
    "package not listed in setup.cfg": unlisted_packages,
    "module in no layer of the contract": unplaced_modules,
    "module loaded by string": string_load_violations,
    "same file name": duplicate_name_violations,
    "submodule shadowed by its package": shadowed_submodule_violations,
}


def all_violations(root: Path) -> dict[str, list[str]]:
    return {title: check(root) for title, check in CHECKS.items()}


def _report(found: dict[str, list[str]]) -> str:
    lines = []
    for title, items in found.items():
        if items:
            lines.append(f"{title} ({len(items)}):")
            lines += [f"  {item}" for item in items]
    return "\n".join(lines)


# -- the real tree --------------------------------------------------------------------------------
def test_lint_imports_keeps_every_contract_of_the_tree(tmp_path):
    run = lint_imports(ROOT, tmp_path)
    print(run.stdout, run.stderr)
    assert run.returncode == 0, run.stdout + run.stderr
    # every module of the package folders is in the graph, every contract of setup.cfg checked
    assert f"Analyzed {len(modules(ROOT))} files" in run.stdout
    assert f"Contracts: {len(contract_names(ROOT))} kept, 0 broken." in run.stdout


def test_real_tree_layout():
    files = modules(ROOT)
    assert {"patchassoc.theory.structure", "patchassoc.cli.main",
            "patchassoc.simulations.engines.population.exact"} <= set(files)
    text = _report(all_violations(ROOT))
    print(text)
    if text:
        pytest.fail("layout violations of the package (issues 23, 37):\n" + text, pytrace=False)


# -- each check fails on a tree made to fail ------------------------------------------------------
def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "tree"
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


#: A small package with every layer of the contract and an import along each allowed arrow;
#: its setup.cfg is the repository's, so the contracts under test are the real ones.
_BASE = {
    "setup.cfg": (ROOT / "setup.cfg").read_text(encoding="utf-8"),
    "patchassoc/__init__.py": "from patchassoc.api import run\n",
    "patchassoc/api.py": "from patchassoc.simulations.studies import claims\n",
    "patchassoc/__main__.py": "from patchassoc.cli.main import main\n",
    "patchassoc/cli/__init__.py": "",
    "patchassoc/cli/main.py": ("from patchassoc.figures import draw\n"
                               "from patchassoc.benchmarks import bench\n"),
    "figures/__init__.py": "",
    "figures/draw.py": "from patchassoc.simulations.studies import claims\n",
    "benchmarks/__init__.py": "",
    "benchmarks/bench.py": "from patchassoc.simulations.engines import exact\n",
    "simulations/__init__.py": "",
    "simulations/studies/__init__.py": "",
    "simulations/studies/claims.py": "from ..engines import exact\nfrom ..runtime import results\n",
    "simulations/engines/__init__.py": "",
    "simulations/engines/exact.py": "from patchassoc.theory import config\n",
    "simulations/engines/sampler.py": "from . import exact\n",
    "simulations/runtime/__init__.py": "",
    "simulations/runtime/results.py": "import json\n",
    "theory/__init__.py": "",
    "theory/config.py": "import math\n",
}

#: The statistics package, where it exists: below the studies and the engines.
_ANALYSIS = {
    "simulations/analysis/__init__.py": "",
    "simulations/analysis/stats.py": "import math\n",
    "simulations/studies/claims.py": ("from ..engines import exact\nfrom ..runtime import results\n"
                                      "from ..analysis import stats\n"),
    "simulations/engines/exact.py": ("from patchassoc.theory import config\n"
                                     "from patchassoc.simulations.analysis import stats\n"),
}


@pytest.mark.parametrize("extra", [{}, _ANALYSIS], ids=["without analysis", "with analysis"])
def test_a_clean_synthetic_tree_keeps_every_contract(tmp_path, extra):
    root = _tree(tmp_path, {**_BASE, **extra})
    run = lint_imports(root, tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"Analyzed {len(modules(root))} files" in run.stdout
    assert f"Contracts: {len(contract_names(root))} kept, 0 broken." in run.stdout
    assert all_violations(root) == {title: [] for title in CHECKS}


#: One fault per case: the file that holds it, the contract it breaks (setup.cfg section), and
#: what lint-imports must print (the import, as ``importer -> imported (l.LINE)``; for a cycle,
#: the package and the import that would break it). An upward import between two sibling
#: packages (theory -> simulations) also closes a cycle between them, so it breaks no-cycles too.
_FAULTS = {
    "an upward import in a function": (
        {"theory/config.py": "def f():\n    from patchassoc.simulations.engines.exact import x\n"},
        "layers", "patchassoc.theory.config -> patchassoc.simulations.engines.exact (l.2)"),
    "a relative upward import": (
        {"simulations/studies/claims.py": "from ..engines import exact\nfrom ...cli import main\n"},
        "layers", "patchassoc.simulations.studies.claims -> patchassoc.cli.main (l.2)"),
    "runtime importing theory": (
        {"simulations/runtime/results.py": "from patchassoc.theory import config\n"},
        "layers", "patchassoc.simulations.runtime.results -> patchassoc.theory.config (l.1)"),
    "a figure importing a benchmark": (
        {"figures/draw.py": "from patchassoc.benchmarks import bench\n"},
        "layers", "patchassoc.figures.draw -> patchassoc.benchmarks.bench (l.1)"),
    "the statistics importing an engine": (
        {"simulations/analysis/__init__.py": "",
         "simulations/analysis/stats.py": "from ..engines import exact\n"},
        "layers", "patchassoc.simulations.analysis.stats -> patchassoc.simulations.engines.exact"
                  " (l.1)"),
    "a benchmark importing a study": (
        {"benchmarks/bench.py": "from patchassoc.simulations.studies import claims\n"},
        "benchmarks", "patchassoc.benchmarks.bench -> patchassoc.simulations.studies.claims (l.1)"),
    "the public API drawing": (
        {"patchassoc/api.py": "from patchassoc.figures import draw\n"},
        "public-api", "patchassoc.api -> patchassoc.figures.draw (l.1)"),
    "a command importing the re-exports": (
        {"patchassoc/cli/main.py": "from patchassoc import run\n"},
        "package-roots", "patchassoc.cli.main -> patchassoc (l.1)"),
    "code in the bare simulations package": (
        {"simulations/__init__.py": "from patchassoc.theory import config\n"},
        "bare-simulations", "patchassoc.simulations -> patchassoc.theory.config (l.1)"),
    "a cycle inside a function": (
        {"simulations/engines/exact.py": ("from patchassoc.theory import config\n"
                                          "def f():\n    from . import sampler\n")},
        "no-cycles", "No cycles are allowed in patchassoc.simulations.engines. It could be made "
                     "acyclic by removing 1 dependency: - .sampler -> .exact (1 import)"),
}


@pytest.mark.parametrize("fault", list(_FAULTS))
def test_a_broken_contract_fails_lint_imports_and_names_the_import(tmp_path, fault):
    change, contract, shown = _FAULTS[fault]
    root = _tree(tmp_path, {**_BASE, **change})
    run = lint_imports(root, tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    report = " ".join(run.stdout.split())   # lint-imports wraps long lines
    assert f"{' '.join(contract_names(root)[contract].split())} BROKEN" in report, run.stdout
    assert shown in report, run.stdout


def test_a_module_in_no_layer_is_reported(tmp_path):
    root = _tree(tmp_path, {**_BASE, "simulations/helpers.py": "",
                            "patchassoc/utils/__init__.py": ""})
    assert unplaced_modules(root) == ["patchassoc.simulations.helpers", "patchassoc.utils"]


def test_loading_by_string_is_reported(tmp_path):
    root = _tree(tmp_path, {**_BASE, "patchassoc/cli/report.py": (
        "import importlib\nCOMMANDS = ('patchassoc.cli.main',)\n"
        "def load():\n    return [importlib.import_module(p) for p in COMMANDS]\n"
        "def numpy():\n    return importlib.import_module('numpy')\n"
        "def one():\n    return __import__('patchassoc.theory.config')\n"),
        # allowed: a package's lazy re-export of its own submodule by a relative name
        "patchassoc/__init__.py": (
            "import importlib\ndef __getattr__(name):\n"
            "    return getattr(importlib.import_module(f'.{name}', __name__), name)\n"),
        # not allowed: the same outside a lazy loader package
        "simulations/engines/__init__.py": (
            "import importlib\ndef __getattr__(name):\n"
            "    return importlib.import_module('.exact', __name__)\n")})
    found = string_load_violations(root)
    assert len(found) == 3, found
    assert "patchassoc/cli/report.py:4" in found[0] and "patchassoc.cli.main" in found[0]
    assert "patchassoc/cli/report.py:8" in found[1] and "patchassoc.theory.config" in found[1]
    assert found[2].startswith("simulations/engines/__init__.py:3")


def test_a_duplicate_file_name_is_reported(tmp_path):
    root = _tree(tmp_path, {**_BASE, "figures/config.py": ""})
    assert duplicate_name_violations(root) == [
        "config.py: patchassoc.figures.config, patchassoc.theory.config"]


def test_an_unlisted_package_is_reported(tmp_path):
    root = _tree(tmp_path, {**_BASE, "theory/extra/__init__.py": ""})
    assert unlisted_packages(root) == ["patchassoc.theory.extra"]


def test_a_submodule_shadowed_by_its_package_is_reported(tmp_path):
    root = _tree(tmp_path, {**_BASE,
                            "theory/part.py": "def part():\n    return 1\n",
                            "theory/__init__.py": "from patchassoc.theory.part import part\n"})
    assert shadowed_submodule_violations(root) == [
        "patchassoc.theory.part: the package's __init__ (line 1) binds 'part' to something other "
        "than its submodule"]
    fine = _tree(tmp_path / "fine", {**_BASE, "theory/part.py": "def run():\n    return 1\n",
                                      "theory/__init__.py": "from patchassoc.theory import part\n"
                                                            "from patchassoc.theory.part import run\n"})
    assert shadowed_submodule_violations(fine) == []


if __name__ == "__main__":
    # By hand: lint-imports on the tree (its arguments pass through, e.g. --contract layers).
    with tempfile.TemporaryDirectory() as work:
        copy = installed_copy(ROOT, Path(work) / "installed")
        sys.exit(subprocess.run([_lint_imports_command(), "--no-cache", *sys.argv[1:]],
                                cwd=copy).returncode)
