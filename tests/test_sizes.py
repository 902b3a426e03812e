"""Sizes that fit on a screen (issue 37): no module of the package over ``MAX_MODULE_LINES``
lines and no function over ``MAX_FUNCTION_CODE_LINES`` lines of code.

A module's size is its number of lines. A function's size is its number of lines of code: the
lines from its ``def`` to its last line that hold a token other than a comment, a blank line
or a docstring (of the module, a class or a function); a nested function counts in its parent
too. Read with :mod:`ast` and :mod:`tokenize` (never imported), over the folders the package
installs from. The tests feed the same measure small synthetic sources and see each fault
named with its count.
"""
from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The folders the package ``patchassoc`` installs from (setup.cfg ``package_dir``).
SOURCE_ROOTS = ("theory", "simulations", "patchassoc", "figures", "benchmarks")

MAX_MODULE_LINES = 800
MAX_FUNCTION_CODE_LINES = 150

_NOT_CODE = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
             tokenize.ENDMARKER)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _docstring_lines(tree) -> set:
    """The lines of every docstring (module, class, function) of ``tree``."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, (*_FUNCTIONS, ast.ClassDef, ast.Module)) and node.body:
            first = node.body[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def _token_lines(source: str) -> set:
    """The lines that hold a token other than a comment or a line break."""
    lines = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in _NOT_CODE:
            lines.update(range(tok.start[0], tok.end[0] + 1))
    return lines


def function_sizes(source: str) -> list:
    """(qualified name, lines of code) of every function of ``source``, in source order."""
    tree = ast.parse(source)
    code = _token_lines(source) - _docstring_lines(tree)
    sizes = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            name = prefix
            if isinstance(child, (*_FUNCTIONS, ast.ClassDef)):
                name = f"{prefix}{child.name}."
            if isinstance(child, _FUNCTIONS):
                count = sum(1 for line in range(child.lineno, child.end_lineno + 1)
                            if line in code)
                sizes.append((name[:-1], count))
            visit(child, name)

    visit(tree, "")
    return sizes


def offenders(path: Path, label: str) -> list:
    """The faults of one file, each a line naming it and its count."""
    source = path.read_text(encoding="utf-8")
    found = []
    lines = len(source.splitlines())
    if lines > MAX_MODULE_LINES:
        found.append(f"{label}: {lines} lines (module limit {MAX_MODULE_LINES})")
    for name, count in function_sizes(source):
        if count > MAX_FUNCTION_CODE_LINES:
            found.append(f"{label}: function {name} has {count} lines of code "
                         f"(limit {MAX_FUNCTION_CODE_LINES})")
    return found


def tree_offenders(root: Path = ROOT) -> list:
    found = []
    for folder in SOURCE_ROOTS:
        for path in sorted((root / folder).rglob("*.py")):
            found.extend(offenders(path, path.relative_to(root).as_posix()))
    return found


def test_no_module_or_function_over_its_limit():
    checked = [p for folder in SOURCE_ROOTS for p in (ROOT / folder).rglob("*.py")]
    assert len(checked) > 100, "the walk found too few modules: it is broken"
    assert tree_offenders() == []


def _function(body_lines: int, name: str = "f") -> str:
    return f"def {name}(x):\n" + "".join(f"    x = x + {i}\n" for i in range(body_lines - 1))


def test_a_long_function_is_named_with_its_count(tmp_path):
    path = tmp_path / "long.py"
    path.write_text(_function(MAX_FUNCTION_CODE_LINES + 1, "too_long")
                    + _function(MAX_FUNCTION_CODE_LINES, "just_fits"))
    assert offenders(path, "long.py") == [
        f"long.py: function too_long has {MAX_FUNCTION_CODE_LINES + 1} lines of code "
        f"(limit {MAX_FUNCTION_CODE_LINES})"]


def test_comments_blank_lines_and_docstrings_are_not_code(tmp_path):
    source = ('def f(x):\n    """A docstring\n\n    over lines."""\n    # a comment\n\n'
              '    y = """a string\n    that is code"""\n    return (x +\n            y)\n')
    assert function_sizes(source) == [("f", 5)]
    padded = _function(MAX_FUNCTION_CODE_LINES).replace(
        "\n", "\n    # a comment\n\n", MAX_FUNCTION_CODE_LINES)
    assert function_sizes(padded) == [("f", MAX_FUNCTION_CODE_LINES)]


def test_nested_functions_and_methods_are_named_and_counted_in_their_parent():
    source = ("class K:\n    def m(self):\n        def inner():\n            return 1\n"
              "        return inner()\n")
    assert function_sizes(source) == [("K.m", 4), ("K.m.inner", 2)]


def test_a_long_module_is_named_with_its_count(tmp_path):
    path = tmp_path / "big.py"
    path.write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    assert offenders(path, "big.py") == [
        f"big.py: {MAX_MODULE_LINES + 1} lines (module limit {MAX_MODULE_LINES})"]
    path.write_text("x = 1\n" * MAX_MODULE_LINES)
    assert offenders(path, "big.py") == []
