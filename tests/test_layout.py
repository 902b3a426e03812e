"""Layout of the package (issue 23): who may import whom, no cycles, no loading by string, no
two modules with the same file name.

The source files of every folder that installs as part of ``patchassoc`` (setup.cfg
``package_dir``: ``patchassoc/``, ``theory/``, ``simulations/``, ``figures/``,
``benchmarks/``) are parsed with :mod:`ast`, never imported. Every import of a
``patchassoc.*`` module is collected, at module level and inside functions, absolute and
relative (resolved against the importing module's package). ``from P import name`` is an
import of ``P.name`` when that is a module, else of ``P``.

Each check is a function of a root folder returning its violations (strings), so the tests at
the bottom feed it a small synthetic tree with a deliberate fault and see it reported; the
test on the real tree prints every violation it finds.
"""
from __future__ import annotations

import ast
import configparser
from collections import defaultdict
from dataclasses import dataclass
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

#: Layers, by dotted prefix (the longest matching prefix wins). ``top`` is the top package's
#: own modules (``patchassoc/__init__.py``, ``api.py``, ``__main__.py``); ``simulations`` is
#: the bare ``patchassoc.simulations`` package (it holds no code).
LAYER_PREFIXES = {
    "patchassoc.cli": "cli",
    "patchassoc.benchmarks": "benchmarks",
    "patchassoc.simulations.studies": "studies",
    "patchassoc.simulations.engines": "engines",
    "patchassoc.simulations.runtime": "runtime",
    "patchassoc.figures": "figures",
    "patchassoc.theory": "theory",
}
TOP_MODULES = {"patchassoc", "patchassoc.api", "patchassoc.__main__"}

#: The allowed arrows between layers (from, to), drawn as
#:     cli -> studies -> engines -> theory,   cli -> figures -> studies,
#:     cli -> benchmarks -> engines,   studies -> runtime,   engines -> runtime,
#:     figures -> engines, theory, runtime,
#:     top -> cli, studies, engines, theory, runtime;
#: a chain may be followed down (cli -> theory is cli -> studies -> engines -> theory in one
#: step), never up or sideways. An import inside one layer is always allowed; anything not listed
#: is a violation (e.g. studies -> cli, studies -> figures, engines -> studies, theory -> anything,
#: runtime -> studies).
ALLOWED = {
    ("top", "cli"), ("top", "studies"), ("top", "engines"), ("top", "theory"), ("top", "runtime"),
    ("cli", "studies"), ("cli", "engines"), ("cli", "theory"), ("cli", "runtime"),
    ("cli", "figures"), ("cli", "benchmarks"),
    ("benchmarks", "engines"), ("benchmarks", "theory"), ("benchmarks", "runtime"),
    ("studies", "engines"), ("studies", "theory"), ("studies", "runtime"),
    ("engines", "theory"), ("engines", "runtime"),
    # figures sit between the command line and the studies: they draw the results that studies
    # and engines return or save, and may read their types and constants; nothing below them
    # (a study, an engine) may draw
    ("figures", "studies"), ("figures", "engines"), ("figures", "theory"), ("figures", "runtime"),
}
#: Nothing may import the bare ``patchassoc.simulations`` package but its parts; it holds no code.
ALLOWED |= {(layer, "simulations") for layer in ("studies", "engines", "runtime", "top")}

#: Where ``importlib.import_module`` may load the project's own code: the lazy ``__getattr__``
#: re-exports of a package's own submodules (relative names, one dot). They are allowed because
#: they keep ``import patchassoc`` (and the optional PyTorch part of the ViT engine) cheap: the
#: submodule is loaded on first use of one of its names, and a relative name can only reach the
#: package's own submodules, so no arrow of the layering is hidden by them.
LAZY_LOADERS = {"patchassoc", "patchassoc.simulations.engines.vit"}

_LOADERS = {"import_module", "__import__"}


# -- reading the tree -----------------------------------------------------------------------------
def package_dir(root: Path) -> dict[str, str]:
    cfg = Path(root) / "setup.cfg"
    if not cfg.exists():
        return dict(DEFAULT_PACKAGE_DIR)
    parser = configparser.ConfigParser()
    parser.read(cfg)
    out = {}
    for line in parser.get("options", "package_dir", fallback="").splitlines():
        if "=" in line:
            name, folder = (s.strip() for s in line.split("=", 1))
            out[name] = folder
    return out or dict(DEFAULT_PACKAGE_DIR)


def modules(root: Path) -> dict[str, Path]:
    """Dotted name -> source file of every module under the package folders."""
    root = Path(root)
    mapping = package_dir(root)
    folders = {name: (root / folder).resolve() for name, folder in mapping.items()}
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


def layer(module: str) -> str:
    if module in TOP_MODULES:
        return "top"
    if module == "patchassoc.simulations":
        return "simulations"
    best = max((p for p in LAYER_PREFIXES if module == p or module.startswith(p + ".")),
               key=len, default=None)
    return LAYER_PREFIXES[best] if best else "unplaced"


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    line: int
    in_function: bool

    def where(self, files: dict[str, Path], root: Path) -> str:
        path = files[self.source]
        try:
            path = path.relative_to(Path(root).resolve())
        except ValueError:
            pass
        return f"{path}:{self.line}"


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _resolve(module: str, path: Path, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    base = _package_of(module, path).split(".")
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _known(target: str, files: dict[str, Path]) -> str:
    """The longest known module that ``target`` names (itself, or a package above it)."""
    parts = target.split(".")
    while parts and ".".join(parts) not in files:
        parts.pop()
    return ".".join(parts) if parts else target


def _ours(name: str) -> bool:
    return name == "patchassoc" or name.startswith("patchassoc.")


class _Visitor(ast.NodeVisitor):
    def __init__(self, module, path, files):
        self.module, self.path, self.files = module, path, files
        self.imports: list[Import] = []
        self.calls: list[tuple[ast.Call, list[str]]] = []  # (call, enclosing functions)
        self._functions: list[str] = []

    def _add(self, target, node):
        if _ours(target):
            self.imports.append(Import(self.module, _known(target, self.files), node.lineno,
                                       bool(self._functions)))

    def visit_FunctionDef(self, node):
        self._functions.append(node.name)
        self.generic_visit(node)
        self._functions.pop()

    visit_AsyncFunctionDef = visit_FunctionDef
    def visit_Lambda(self, node):
        self._functions.append("<lambda>")
        self.generic_visit(node)
        self._functions.pop()

    def visit_Import(self, node):
        for alias in node.names:
            self._add(alias.name, node)

    def visit_ImportFrom(self, node):
        base = _resolve(self.module, self.path, node.level, node.module)
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            self._add(sub if sub in self.files else base, node)

    def visit_Call(self, node):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name in _LOADERS:
            self.calls.append((node, list(self._functions)))
        self.generic_visit(node)


def _parse(root: Path):
    files = modules(root)
    parsed = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        visitor = _Visitor(module, path, files)
        visitor.visit(tree)
        parsed[module] = (tree, visitor)
    return files, parsed


def imports(root: Path) -> list[Import]:
    files, parsed = _parse(root)
    return [imp for _, v in parsed.values() for imp in v.imports if imp.target != imp.source]


# -- the checks -----------------------------------------------------------------------------------
def layer_violations(root: Path) -> list[str]:
    """Every import whose arrow between layers is not in ``ALLOWED``."""
    files = modules(root)
    out = []
    for imp in imports(root):
        a, b = layer(imp.source), layer(imp.target)
        if a != b and (a, b) not in ALLOWED or a == b == "unplaced":
            how = "in a function" if imp.in_function else "module level"
            out.append(f"{imp.where(files, root)}: {imp.source} imports {imp.target} "
                       f"({a} -> {b}, {how})")
    return sorted(set(out))


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    index, low, stack, on, comps = {}, {}, [], set(), []
    counter = [0]

    def visit(v):  # iterative Tarjan
        work = [(v, iter(sorted(graph.get(v, ()))))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    comps.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return comps


def _cycle_through(start: str, graph: dict[str, set[str]], comp: set[str]) -> list[str]:
    """A shortest path start -> ... -> start inside one strongly connected component."""
    prev = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph.get(v, ())):
                if w not in comp:
                    continue
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return [start, start]


def cycle_violations(root: Path) -> list[str]:
    """One cycle (as a path) per set of modules that import each other, directly or not; every
    import counts (module level and in functions)."""
    graph: dict[str, set[str]] = defaultdict(set)
    lines: dict[tuple[str, str], Import] = {}
    files = modules(root)
    for imp in imports(root):
        graph[imp.source].add(imp.target)
        lines.setdefault((imp.source, imp.target), imp)
    out = []
    for comp in _strongly_connected(graph):
        if len(comp) < 2:
            continue
        cycle = _cycle_through(comp[0], graph, set(comp))
        steps = [f"{a} ({lines[a, b].where(files, root)})" for a, b in zip(cycle, cycle[1:])]
        extra = f" [{len(comp)} modules in the knot: {', '.join(comp)}]" if len(comp) > 3 else ""
        out.append("cycle: " + " -> ".join(steps + [cycle[-1]]) + extra)
    return out


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
    files, parsed = _parse(root)
    out = []
    for module, (tree, visitor) in parsed.items():
        literals = _module_literals(tree)
        in_file = sorted({s for s in _strings(tree) if _ours(s) and s in files})
        for call, functions in visitor.calls:
            where = Import(module, "", call.lineno, bool(functions)).where(files, root)
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
                           and files[module].name == "__init__.py"
                           and not first.startswith(".."))
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


CHECKS = {
    "import against the layering": layer_violations,
    "import cycle": cycle_violations,
    "module loaded by string": string_load_violations,
    "same file name": duplicate_name_violations,
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
def test_the_tree_is_parsed():
    files = modules(ROOT)
    assert "patchassoc.theory.structure" in files
    assert "patchassoc.simulations.engines.population.exact" in files
    assert "patchassoc.cli.main" in files
    assert all(layer(m) != "unplaced" for m in files), [m for m in files if layer(m) == "unplaced"]


def test_real_tree_layout():
    found = all_violations(ROOT)
    text = _report(found)
    print(text)
    if text:
        pytest.fail("layout violations of the package (issue 23):\n" + text, pytrace=False)


# -- each check fails on a tree made to fail ------------------------------------------------------
def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


_BASE = {
    "patchassoc/__init__.py": "",
    "patchassoc/cli/__init__.py": "",
    "patchassoc/cli/main.py": "from patchassoc.simulations.studies import claims\n",
    "simulations/__init__.py": "",
    "simulations/studies/__init__.py": "",
    "simulations/studies/claims.py": "from ..engines import exact\n",
    "simulations/engines/__init__.py": "",
    "simulations/engines/exact.py": "from patchassoc.theory import config\n",
    "theory/__init__.py": "",
    "theory/config.py": "import math\n",
    "figures/__init__.py": "",
    "benchmarks/__init__.py": "",
}


def test_a_clean_synthetic_tree_passes(tmp_path):
    root = _tree(tmp_path, _BASE)
    assert all_violations(root) == {title: [] for title in CHECKS}


def test_an_upward_import_is_reported(tmp_path):
    root = _tree(tmp_path, {**_BASE, "theory/config.py": (
        "def f():\n    from patchassoc.simulations.engines.exact import x\n")})
    found = layer_violations(root)
    assert len(found) == 1
    assert "theory/config.py:2" in found[0] and "(theory -> engines, in a function)" in found[0]


def test_a_relative_upward_import_is_reported(tmp_path):
    root = _tree(tmp_path, {**_BASE, "simulations/studies/claims.py": (
        "from ..engines import exact\nfrom ...cli import main\n")})
    found = layer_violations(root)
    assert found == ["simulations/studies/claims.py:2: patchassoc.simulations.studies.claims "
                     "imports patchassoc.cli.main (studies -> cli, module level)"]


def test_a_cycle_is_reported_as_a_path(tmp_path):
    root = _tree(tmp_path, {**_BASE, "simulations/engines/exact.py": (
        "from patchassoc.theory import config\nfrom . import sampler\n"),
        "simulations/engines/sampler.py": "def f():\n    import patchassoc.simulations.engines.exact\n"})
    found = cycle_violations(root)
    assert len(found) == 1
    assert found[0].startswith("cycle: patchassoc.simulations.engines.exact (")
    assert "patchassoc.simulations.engines.sampler (simulations/engines/sampler.py:2)" in found[0]
    assert found[0].endswith("-> patchassoc.simulations.engines.exact")


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
