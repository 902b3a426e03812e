"""A Sphinx directive that renders the command line's help from its parser.

``.. cli-help::`` writes ``patchassoc --help`` and, for every command of
:data:`patchassoc.cli.main.COMMANDS`, ``patchassoc COMMAND --help``, as the parser prints them,
so the reference cannot drift from the options the program accepts.
"""
from __future__ import annotations

import io
import os
from contextlib import redirect_stdout

from docutils import nodes
from docutils.parsers.rst import Directive


def _help(parser) -> str:
    buf = io.StringIO()
    with redirect_stdout(buf):
        parser.print_help()
    return buf.getvalue()


class CliHelp(Directive):
    has_content = False

    def run(self):
        from patchassoc.cli.main import build_parser
        os.environ["COLUMNS"] = "100"   # argparse wraps to the terminal; fix it for the page
        parser, commands = build_parser()
        out = [nodes.literal_block(text=_help(parser), language="text")]
        sub = next(a for a in parser._actions if a.dest == "command")
        for name in commands:
            section = nodes.section(ids=[f"cli-{name}"])
            section += nodes.title(text=f"patchassoc {name}")
            section += nodes.literal_block(text=_help(sub.choices[name]), language="text")
            out.append(section)
        return out


def setup(app):
    app.add_directive("cli-help", CliHelp)
    return {"version": "1", "parallel_read_safe": True}
