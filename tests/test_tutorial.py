"""docs/tutorial.md cannot go stale, and neither can its notebook.

The Markdown page is the source, a MyST text notebook (jupytext's ``md:myst`` format, whose
``{code-cell}`` blocks are the notebook's code cells). ``docs/tutorial.ipynb`` is built from it
by jupytext (the command is in the tutorial's introduction); a test checks that the committed
notebook holds the page's cells, source for source, so the two cannot drift. The notebook is
then executed by nbclient in a fresh Jupyter kernel, from a temporary working folder, cell after
cell, as a reader running it top to bottom would; a failing cell is reported with its number and
its first line, and the figures it draws must come out as images under their cells.

The documentation build executes the same page with myst-nb (docs/conf.py), and
tests/test_docs.py checks the outputs and figures on the built page.

Every fenced block of the tutorial must be a ``{code-cell}``: a plain ``python`` block would be
shown but never run, and could go stale unseen.
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
#: The figures the tutorial draws inline: population dynamics, its attention maps, and the
#: training curves of the sampled run.
FIGURES = 3
#: The opening of a code cell in jupytext's MyST format (what myst-nb executes).
CODE_CELL = "{code-cell}"


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
    return jupytext.reads(TUTORIAL.read_text(), fmt="md:myst")


def test_fence_parser_finds_blocks_and_their_lines():
    text = "intro\n```python\nx = 1\n```\ntext\n```bash\nls\n```\n"
    assert blocks(text) == [(2, "python", "x = 1\n"), (6, "bash", "ls\n")]


def test_every_block_is_a_code_cell():
    text = TUTORIAL.read_text()
    found = blocks(text)
    assert len(found) >= 10
    other = [(line, lang) for line, lang, _ in found if lang != CODE_CELL]
    assert not other, f"fenced blocks that would not run (line, language): {other}"
    # the front matter that makes myst-nb execute the page, and jupytext read it as MyST
    front = text.split("---\n")[1]
    assert "format_name: myst" in front and "name: python3" in front, front


def test_images_are_counted_per_output():
    """What the execution test below counts as a figure: an image output of a code cell."""
    nb = {"cells": [
        {"cell_type": "code", "outputs": [
            {"output_type": "execute_result", "data": {"text/plain": "<Figure>",
                                                       "image/png": "iVBOR"}},
            {"output_type": "stream", "text": "x"}]},
        {"cell_type": "code", "outputs": [
            {"output_type": "execute_result", "data": {"text/plain": "<Figure size 640x480>"}}]},
        {"cell_type": "markdown", "source": "![](a.png)"}]}
    assert images(nb) == 1


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


def images(nb) -> int:
    """How many outputs of code cells are images (a figure shown under its cell)."""
    return sum(any(k.startswith("image/") for k in o.get("data", {}))
               for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", []))


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
    # the figures are drawn as images under their cells, not as "<Figure size ...>" text
    assert images(nb) == FIGURES, images(nb)
