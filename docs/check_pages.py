"""Open the built pages in headless Chromium with the network off, as a reader on a machine with no
network would, take a screenshot of each, and fail on what that reader would trip over.

    python docs/check_pages.py [BUILD] [--pages index.html SPEC.html ...] [--shots DIR]

BUILD is the HTML build (default ``docs/_build/html``, made by
``sphinx-build -b html docs docs/_build/html``); screenshots go to ``BUILD/_screenshots``
(``--shots``), one full-page PNG per page. For each page it fails on:

- a formula left raw: a ``$`` or ``\\(`` in the rendered text (code excluded), or a math element
  that MathJax did not typeset;
- a broken image (not loaded, or zero size);
- a console error or an uncaught exception in the page;
- a request that left the build (the network is off: a font, a script or MathJax from a CDN);
- a link, image, stylesheet or script into the build whose file is missing, or whose ``#anchor``
  is not on the page it points to.

It prints one line per problem and exits 1 when there is any, 0 when every page is clean, and 2
when it cannot run (no Chromium, no Playwright, no build). Chromium is Debian's
(``apt-get install chromium``; ``PATCHASSOC_CHROMIUM`` names another binary), driven by the
``playwright`` package of the docs extra; Playwright never downloads a browser here.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

#: The pages a reader opens first: the start page, the mathematics, the figures, the tutorial,
#: the API reference and the claims.
PAGES = ("index.html", "SPEC.html", "gallery.html", "tutorial.html", "api/index.html",
         "claims.html")
#: Chromium as this machine runs it headless (no background connections, a fresh profile).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
#: How long a page may take to load and typeset its formulas (a loaded 2-core machine).
TIMEOUT_MS = 120_000
VIEWPORT = {"width": 1280, "height": 900}

# The text a reader sees, without code (a shell prompt's $ is code), typeset formulas, and the
# theme's hidden or off-screen parts.
_VISIBLE_TEXT_JS = """() => {
  const root = (document.querySelector('main') || document.body).cloneNode(true);
  root.querySelectorAll('pre, code, kbd, samp, script, style, mjx-container, .highlight, '
                        + '.MathJax, mjx-assistive-mml, .visually-hidden, .sr-only')
      .forEach(e => e.remove());
  return root.innerText;
}"""
_MATH_JS = """() => {
  const els = Array.from(document.querySelectorAll('span.math, div.math'));
  const raw = els.filter(e => !e.querySelector('mjx-container'))
                 .map(e => e.textContent.trim().slice(0, 60));
  return {total: els.length, raw: raw};
}"""
_IMAGES_JS = """async () => {
  const imgs = Array.from(document.images);
  imgs.forEach(i => { i.loading = 'eager'; });
  await Promise.all(imgs.map(i => i.decode().catch(() => null)));
  return imgs.map(i => ({src: i.currentSrc || i.src, ok: i.complete && i.naturalWidth > 0}));
}"""
_LINKS_JS = """() => {
  const urls = [];
  document.querySelectorAll('a[href]').forEach(e => urls.push(e.href));
  document.querySelectorAll('img[src], script[src], source[src]').forEach(e => urls.push(e.src));
  document.querySelectorAll('link[href]').forEach(e => urls.push(e.href));
  return urls;
}"""


@dataclass
class PageReport:
    """What one page showed: its problems (each one line), and what was checked."""
    page: str
    problems: list[str] = field(default_factory=list)
    formulas: int = 0
    images: int = 0
    links: int = 0
    screenshot: Path | None = None


def find_chromium() -> str | None:
    """Debian's Chromium (or ``PATCHASSOC_CHROMIUM``), None when there is none."""
    given = os.environ.get("PATCHASSOC_CHROMIUM")
    if given:
        return given if Path(given).is_file() else None
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def unavailable() -> str | None:
    """Why the check cannot run here (one line), or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright is not installed (the docs extra: pip install -e '.[docs]')"
    if find_chromium() is None:
        return "no Chromium here (Debian: apt-get install chromium)"
    return None


def raw_math(text: str) -> list[str]:
    """The places in ``text`` (rendered, code removed) where a formula was left as its source:
    a ``$`` or a ``\\(`` / ``\\[``, each with a few characters around it."""
    return [text[max(0, m.start() - 25):m.end() + 25].replace("\n", " ")
            for m in re.finditer(r"\$|\\\(|\\\[", text)]


def _ids(path: Path, cache: dict) -> set[str]:
    if path not in cache:
        html = path.read_text(encoding="utf-8", errors="replace")
        cache[path] = set(re.findall(r'\bid="([^"]+)"', html))
    return cache[path]


def missing_targets(urls, build: Path, cache: dict) -> list[str]:
    """The URLs among ``urls`` that point into ``build`` (or out of it, on disk) and are missing:
    no such file, or an ``#anchor`` not on the HTML page it names."""
    build = build.resolve()
    bad = []
    for url in sorted(set(urls)):
        parts = urlsplit(url)
        if parts.scheme != "file":
            continue
        path = Path(unquote(parts.path))
        if path.is_dir():
            path = path / "index.html"
        if build not in path.resolve().parents and path.resolve() != build:
            bad.append(f"{url} leads out of the build")
        elif not path.is_file():
            bad.append(f"{url} is missing")
        elif parts.fragment and path.suffix == ".html" and \
                unquote(parts.fragment) not in _ids(path, cache):
            bad.append(f"{url}: no #{unquote(parts.fragment)} on {path.relative_to(build)}")
    return bad


def check_page(context, build: Path, page: str, shots: Path, cache: dict) -> PageReport:
    """Open ``page`` of ``build`` in a new tab of ``context`` (network off), screenshot it into
    ``shots`` and return what it showed."""
    report = PageReport(page)
    path = build / page
    if not path.is_file():
        report.problems.append(f"{page} is not in the build")
        return report
    tab = context.new_page()
    tab.set_default_timeout(TIMEOUT_MS)
    tab.on("console", lambda m: m.type == "error" and report.problems.append(
        f"console error: {m.text[:200]}"))
    tab.on("pageerror", lambda e: report.problems.append(f"uncaught exception: {str(e)[:200]}"))

    def request(r):
        if not r.url.startswith(("file:", "data:", "blob:", "about:")):
            report.problems.append(f"requested from the network: {r.url}")
    tab.on("request", request)
    tab.on("requestfailed", lambda r: r.url.startswith("file:") and report.problems.append(
        f"failed to load {r.url} ({r.failure})"))
    try:
        tab.goto(path.resolve().as_uri(), wait_until="load")
        if tab.evaluate("() => document.querySelectorAll('span.math, div.math').length"):
            tab.wait_for_function("() => window.MathJax && MathJax.startup "
                                  "&& MathJax.startup.promise")
            tab.evaluate("() => MathJax.startup.promise.then(() => true)")
        math = tab.evaluate(_MATH_JS)
        report.formulas = math["total"] - len(math["raw"])
        report.problems += [f"formula not typeset: {m!r}" for m in math["raw"][:5]]
        report.problems += [f"raw math in the text: ...{m}..." for m in
                            raw_math(tab.evaluate(_VISIBLE_TEXT_JS))[:5]]
        images = tab.evaluate(_IMAGES_JS)
        report.images = len(images)
        report.problems += [f"broken image: {i['src']}" for i in images if not i["ok"]]
        urls = tab.evaluate(_LINKS_JS)
        report.links = len(urls)
        report.problems += missing_targets(urls, build, cache)
        shot = shots / (page.replace("/", "_").removesuffix(".html") + ".png")
        shot.parent.mkdir(parents=True, exist_ok=True)
        tab.screenshot(path=str(shot), full_page=True)
        report.screenshot = shot
    except Exception as exc:   # a page that does not load or typeset in time: one line
        report.problems.append(f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
    finally:
        tab.close()
    return report


def check_pages(build: Path, pages=PAGES, shots: Path | None = None) -> list[PageReport]:
    """Open each of ``pages`` of ``build`` in headless Chromium, offline; screenshots into
    ``shots`` (default ``build/_screenshots``)."""
    from playwright.sync_api import sync_playwright

    build = Path(build)
    shots = Path(shots) if shots is not None else build / "_screenshots"
    cache: dict = {}
    with tempfile.TemporaryDirectory(prefix="check-pages-") as profile, sync_playwright() as pw:
        browser = pw.chromium.launch_persistent_context(
            profile, executable_path=find_chromium(), headless=True, args=CHROMIUM_ARGS,
            offline=True, viewport=VIEWPORT)
        try:
            return [check_page(browser, build, page, shots, cache) for page in pages]
        finally:
            browser.close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build", nargs="?", type=Path,
                        default=Path(__file__).resolve().parent / "_build" / "html")
    parser.add_argument("--pages", nargs="+", default=list(PAGES))
    parser.add_argument("--shots", type=Path, default=None)
    args = parser.parse_args(argv)
    why = unavailable()
    if why is None and not (args.build / "index.html").is_file():
        why = f"no build in {args.build} (sphinx-build -b html docs {args.build})"
    if why:
        print(f"check_pages: cannot run: {why}", file=sys.stderr)
        return 2
    reports = check_pages(args.build, args.pages, args.shots)
    for r in reports:
        for problem in r.problems:
            print(f"{r.page}: {problem}")
    bad = sum(len(r.problems) for r in reports)
    shots = {r.screenshot.parent for r in reports if r.screenshot}
    print(f"check_pages: {len(reports)} pages, {sum(r.formulas for r in reports)} formulas "
          f"typeset, {sum(r.images for r in reports)} images, {sum(r.links for r in reports)} "
          f"links; {bad} problems; screenshots in {', '.join(map(str, shots)) or '-'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
