"""docs/tutorial.md cannot go stale, and neither can its notebook.

The Markdown page is the source. ``docs/tutorial.ipynb`` is built from it by jupytext (the
command is in the tutorial's introduction); a test checks that the committed notebook holds the
page's cells, source for source, so the two cannot drift. The notebook is then executed by
nbclient in a fresh Jupyter kernel, from a temporary working folder, cell after cell, as a reader
running it top to bottom would; a failing cell is reported with its number and its first line.

Every fenced block of the tutorial must be a ``python`` block: a block that is not run could go
stale unseen.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
TUTORIAL = DOCS / "tutorial.md"
NOTEBOOK = DOCS / "tutorial.ipynb"
FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
#: What the executed cells print (the topics the tutorial talks about, not its values: those
#: are outputs).
NEEDLES = ("refused:", "risk", "Bayes", "rows passing", "claim 1 [", "L1 proved=")


def blocks(text: str) -> list[tuple[int, str, str]]:
    """(line number of the opening fence, language, code) of every fenced block."""
    return [(text.count("\n", 0, m.start()) + 1, m.group(1), m.group(2))
            for m in FENCE.finditer(text)]


def cells(nb) -> list[tuple[str, str]]:
    """(cell type, source) of every cell of a notebook, trailing blank lines folded."""
    def source(c):
        s = c["source"]
        return ("".join(s) if isinstance(s, list) else s).rstrip("\n")
    return [(c["cell_type"], source(c)) for c in nb["cells"]]


def from_markdown():
    jupytext = pytest.importorskip("jupytext")
    return jupytext.reads(TUTORIAL.read_text(), fmt="md")


def test_fence_parser_finds_blocks_and_their_lines():
    text = "intro\n```python\nx = 1\n```\ntext\n```bash\nls\n```\n"
    assert blocks(text) == [(2, "python", "x = 1\n"), (6, "bash", "ls\n")]


def test_every_block_is_python():
    found = blocks(TUTORIAL.read_text())
    assert len(found) >= 10
    other = [(line, lang) for line, lang, _ in found if lang != "python"]
    assert not other, f"fenced blocks that would not run (line, language): {other}"


def test_notebook_holds_the_markdown_cells():
    built = cells(from_markdown())
    committed = cells(json.loads(NOTEBOOK.read_text()))
    code = [src for kind, src in built if kind == "code"]
    assert code == [c.rstrip("\n") for _, lang, c in blocks(TUTORIAL.read_text())]
    assert committed == built, (
        "docs/tutorial.ipynb is not docs/tutorial.md: rebuild it with "
        "jupytext --to ipynb --set-kernel python3 --output docs/tutorial.ipynb docs/tutorial.md")


def test_cells_compare_sources_not_ids():
    """The comparison above can fail: an edited cell differs, an id or metadata does not."""
    a = {"cells": [{"cell_type": "code", "id": "1", "metadata": {}, "source": ["x = 1\n"]}]}
    b = {"cells": [{"cell_type": "code", "id": "2", "metadata": {"t": 1}, "source": "x = 1"}]}
    c = {"cells": [{"cell_type": "code", "id": "1", "metadata": {}, "source": "x = 2"}]}
    assert cells(a) == cells(b)
    assert cells(a) != cells(c)


def test_notebook_executes_in_a_kernel(tmp_path):
    nbclient = pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.reads(NOTEBOOK.read_text(), as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as err:
        code = [c for c in nb.cells if c.cell_type == "code"]
        failed = next((k for k, c in enumerate(code, 1)
                       if any(o.get("output_type") == "error" for o in c.get("outputs", []))),
                      None)
        first = code[failed - 1].source.splitlines()[0] if failed else "?"
        pytest.fail(f"docs/tutorial.ipynb code cell {failed} ({first!r}) failed:\n{err}")
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                   for o in c.get("outputs", []) if o.get("output_type") == "stream")
    for needle in NEEDLES:
        assert needle in text, needle
