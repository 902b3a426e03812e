"""``patchassoc data fashion-mnist [--data-dir DIR]``: make the Fashion-MNIST files available offline.

Finds the four idx files where Debian's package ``dataset-fashion-mnist`` installs them, in the
cache (``~/.cache/patchassoc``) or in ``--data-dir``; otherwise fetches the package with ``apt-get
download`` (no root) and extracts it with ``dpkg-deb -x`` into ``--data-dir`` or the cache. Every
file is checked against the SHA-256 digest of its content stored in
:mod:`patchassoc.simulations.engines.vit.fashion_mnist`; a corrupt file, or a machine where none
of this works, gives one line on stderr and exit status 1 (naming the standard file names a user
can place by hand).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from patchassoc.cli.options import input_path
NAME = "data"
HELP = ("fetch and check a data set offline: fashion-mnist (Debian's package, no root needed; "
        "checked against stored SHA-256 digests)")

#: The files go to ``--dir`` (or the cache), never to ``--out``: it is neither made nor checked.
WRITES_OUT = False

__all__ = ["NAME", "HELP", "add_arguments", "run", "render"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", choices=("fashion-mnist",), help="the data set")
    parser.add_argument("--data-dir", type=Path, default=None, metavar="DIR",
                        help="where the files are, or go (DIR/fashion-mnist/; default: Debian's "
                             "/usr/share/datasets/fashion-mnist if installed, else the cache "
                             "~/.cache/patchassoc)")


def run(ctx) -> dict:
    from patchassoc.simulations.engines.vit.fashion_mnist import fetch

    if ctx.args.data_dir is not None and ctx.args.data_dir.exists():   # made when missing
        input_path(ctx.args.data_dir, "--data-dir", "folder",
                   "where the files are, or go")
    return fetch(ctx.args.data_dir)


def render(summary: dict) -> str:
    how = {"found": "found", "fetched": "fetched from Debian's package into"}[summary["how"]]
    lines = [f"{summary['data']}: {how} {summary['folder']} ({summary['n_train']} train / "
             f"{summary['n_test']} test images, {' x '.join(map(str, summary['image_shape']))}); "
             f"every file matches its stored SHA-256"]
    for name, f in summary["files"].items():
        lines.append(f"  {Path(f['path']).name:28s} {f['bytes']:>10,d} bytes"
                     + ("  (Debian's .gz, byte for byte)" if f["debian_gz"] else ""))
    lines.append("use: patchassoc vit --data fashion-mnist"
                 + ("" if summary["searched_by_default"] else f" --data-dir {summary['folder']}"))
    return "\n".join(lines)
