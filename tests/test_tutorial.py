"""docs/tutorial.md cannot go stale: its fenced Python blocks run here, in order, in one
namespace (as a reader pasting them into one session would), from a temporary working folder.

Every fenced block of the tutorial must be a ``python`` block: a block that is not run could go
stale unseen. A failing block is reported with its number and its first line in the Markdown.
"""
from __future__ import annotations

import re
import traceback
from pathlib import Path

import pytest

TUTORIAL = Path(__file__).resolve().parents[1] / "docs" / "tutorial.md"
FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)


def blocks(text: str) -> list[tuple[int, str, str]]:
    """(line number of the opening fence, language, code) of every fenced block."""
    return [(text.count("\n", 0, m.start()) + 1, m.group(1), m.group(2))
            for m in FENCE.finditer(text)]


def test_fence_parser_finds_blocks_and_their_lines():
    text = "intro\n```python\nx = 1\n```\ntext\n```bash\nls\n```\n"
    assert blocks(text) == [(2, "python", "x = 1\n"), (6, "bash", "ls\n")]


def test_every_block_is_python():
    found = blocks(TUTORIAL.read_text())
    assert len(found) >= 10
    other = [(line, lang) for line, lang, _ in found if lang != "python"]
    assert not other, f"fenced blocks that would not run (line, language): {other}"


def test_tutorial_blocks_run_in_order(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # whatever the tutorial writes stays in the temporary folder
    namespace: dict = {"__name__": "__tutorial__"}
    for k, (line, lang, code) in enumerate(blocks(TUTORIAL.read_text()), 1):
        if lang != "python":
            continue
        try:
            exec(compile(code, f"{TUTORIAL}:block{k}(line {line})", "exec"), namespace)
        except Exception:  # noqa: BLE001 - report which block failed, with its traceback
            pytest.fail(f"docs/tutorial.md block {k} (fence at line {line}) failed:\n"
                        f"{code}\n{traceback.format_exc()}")
    out = capsys.readouterr().out
    # the blocks print what the tutorial talks about (not its values: those are outputs)
    for needle in ("refused:", "risk", "Bayes", "rows passing", "claim 1 [", "L1 proved="):
        assert needle in out, needle
