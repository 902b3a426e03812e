"""The README and the documentation's reader pages are a user's pages: no commit hashes and no
issue numbers (what changed, and when, is in CHANGELOG.md), and a README short enough to read:
purpose, the two set-up commands, a short tour, the claims, a figure or two, how to cite."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: A commit (7 hex digits or more, as git abbreviates them) or an issue number.
HISTORY = re.compile(r"\b[0-9a-f]{7,40}\b|[Ii]ssues? [0-9]+")
#: Pages that keep their history on purpose: the changelog; SPEC, whose "declared in issue N"
#: is the record of when each rule was declared; and the performance log, whose rows name the
#: tree each measurement ran on.
HISTORY_PAGES = {"SPEC.md", "changelog.md", "performance.md"}
README_LINES = 200


def history(text: str) -> list[str]:
    """The lines of ``text`` that name a commit or an issue, numbered from 1."""
    return [f"{k}: {line.strip()}" for k, line in enumerate(text.splitlines(), 1)
            if HISTORY.search(line)]


def test_the_readme_names_no_commit_and_no_issue():
    assert history((ROOT / "README.md").read_text(encoding="utf-8")) == []


def test_the_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_LINES, len(lines)


@pytest.mark.parametrize("page", sorted(p.relative_to(ROOT / "docs").as_posix() for p in
                                        (ROOT / "docs").rglob("*.md")
                                        if "_build" not in p.parts
                                        and "generated" not in p.parts
                                        and p.name not in HISTORY_PAGES))
def test_a_reader_page_names_no_commit_and_no_issue(page):
    assert history((ROOT / "docs" / page).read_text(encoding="utf-8")) == []


def test_history_is_found():
    assert history("a full reproduction of b235c09\nclean\nissue 35: it read PASS") == [
        "1: a full reproduction of b235c09", "3: issue 35: it read PASS"]
    # numbers a reader needs are not history: 1e15, 10,740 CPU-s, 0.722
    assert history("t = 1e15, 10,740 CPU-s, Wilson [0.722, 1.000], d = 1097") == []


def test_the_readme_keeps_its_parts():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for part in ("<!-- main-command -->\n```bash\n", "<!-- test-command -->\n```bash\n",
                 "<!-- claims -->\n", "<!-- /claims -->", "## Cite", "@inproceedings",
                 "](docs/gallery/", "](CHANGELOG.md)", "](docs/claims.md)"):
        assert part in readme, part
    # every link into the repository leads to a file that is there
    for target in re.findall(r"\]\(((?!https?:)[^)#]+)", readme):
        assert (ROOT / target).exists(), target
