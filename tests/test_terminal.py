"""What a person sees in a terminal (issue 24): every command's --help at 80 and 120 columns, and the tables
of every command at 80 columns: nothing cut, no Python type name, no option name, number or id broken."""
from __future__ import annotations

import re

import click
import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from kvir.cli.app import app
from kvir.cli.present import Col, table

runner = CliRunner()
TYPE_NAMES = re.compile(r"<(str|int|float|bool|path|list\[[^\]]*\])>|\{\w+\}|\[\w+\]\.\.\.\s*<")


def _commands() -> dict[str, click.Command]:
    return dict(typer.main.get_command(app).commands)


def _help(args: list[str], columns: int) -> str:
    res = runner.invoke(app, [*args, "--help"], env={"COLUMNS": str(columns)}, prog_name="kvir")
    assert res.exit_code == 0, res.output
    return res.output


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("columns", [80, 120])
def test_every_help_fits_and_keeps_words_whole(columns):
    """Over the app's own registry: each command's help fits the width, shows no Python type name, breaks
    no word (an option name, a default such as kvir-demo, a URL) across lines, and lists every option."""
    pages = {name: _help([name], columns) for name in _commands()}
    pages[""] = _help([], columns)
    for name, out in pages.items():
        for line in out.splitlines():
            assert len(line) <= columns, (name, line)
        assert not TYPE_NAMES.search(out), (name, TYPE_NAMES.search(out).group(0))
        assert not re.search(r"\w-\n", out), (name, re.search(r".*\w-\n.*", out).group(0))   # "--tenant-b-key-" / "env"
    for name, cmd in _commands().items():
        words = set(pages[name].split())
        for p in cmd.params:
            for opt in getattr(p, "opts", []):
                if opt.startswith("-"):
                    assert opt in words or f"{opt}," in words, (name, opt)   # whole, on one line
        assert f"kvir {name} [OPTIONS]" in pages[name].splitlines()[0], pages[name].splitlines()[0]


def test_the_command_list_gives_each_summary_whole():
    """`kvir --help` at 80 columns: each command's summary is the first sentence of its own help, whole
    (issue 24: every description was cut with "...")."""
    out = _help([], 80)
    listing = out.split("Commands:\n", 1)[1]
    entries = re.split(r"\n  (?=\S)", "\n" + listing)
    found = {}
    for e in entries:
        if e.strip():
            name, _, text = e.strip().partition(" ")
            found[name] = _flat(text)
    assert set(found) == set(_commands())
    for name, text in found.items():
        assert not text.endswith("..."), (name, text)
        assert text.endswith((".", "?", "!")), (name, text)
        assert _flat(_commands()[name].help).startswith(text), (name, text)


def test_metavars_are_words_and_examples_keep_their_lines():
    out = _help(["triage"], 80)
    assert out.splitlines()[0] == "Usage: kvir triage [OPTIONS] [PATHS]..."
    assert re.search(r"^  -i, --incident PATH\s", out, re.M) and re.search(r"^  --year INTEGER\s", out, re.M)
    assert "--join-tolerance NUMBER" in out
    assert _help(["audit"], 80).splitlines()[0] == "Usage: kvir audit [OPTIONS] PATHS..."
    serve = _help(["serve"], 80)
    # the example keeps its two lines (issue 24: "--context 8192 \\       --tenant a=KEY_A")
    assert re.search(r"^ +kvir serve --build .*\\$\n^ +--tenant a=KEY_A --tenant b=KEY_B$", serve, re.M), serve
    probe = _help(["probe"], 80)
    assert re.search(r"^ +--api-key-env KEY_A --tenant-b-key-env KEY_B$", probe, re.M)
    assert "[default: kvir-demo]" in _flat(_help(["demo"], 80))


# ------------------------------------------------------------------------------------------------ tables
def render(renderable, width: int = 80) -> str:
    console = Console(width=width, record=True, file=open("/dev/null", "w"), color_system=None)
    console.print(renderable)
    return console.export_text()


def whole_on_a_line(out: str, values: list[str]) -> None:
    lines = out.splitlines()
    for v in values:
        assert any(v in line for line in lines), (v, out)


IDS = ["01M10ENR2GG2MGWY4S4FGC6BGN", "glm53-prefill-0", "fleet/engine/glm53-prefill-0/server.log:15",
       "1,310,720", "1,048,576", "2026-08-26 22:10:00Z"]


@pytest.mark.parametrize("width", [50, 60, 80, 120])
def test_a_table_never_breaks_a_number_or_an_id(width):
    """At any width: each line fits, every id, number, time and path stays whole on one line; free text
    wraps at spaces; text marked `under` goes below its row; too narrow for the row: a record per row."""
    message = ("prefill node glm53-prefill-0: KV pool 681,280 tokens < context 1,048,576 tokens; the scheduler "
               "rejects prompts of 681,274 tokens and more")
    t = table("Findings", ("request", "node", "evidence", Col("pool", right=True), Col("context", right=True),
                           "when (UTC)", Col("finding", under=True)),
              [[IDS[0], IDS[1], IDS[2], 1310720, 1048576, IDS[5], message]] * 2)
    out = render(t, width)
    assert all(len(line) <= width for line in out.splitlines()), out
    whole_on_a_line(out, IDS)
    assert _flat(message) in _flat(out) and "681,274" in out


def test_below_columns_move_under_the_row_when_the_row_is_too_wide():
    t = table("t", ("node", Col("pool", right=True), Col("evidence", below=True)),
              [["glm53-prefill-0", 681280, "fleet/engine/glm53-prefill-0/server.log:15"]])
    wide, narrow = render(t, 120), render(t, 60)
    assert re.search(r"^glm53-prefill-0\s+681,280\s+fleet/engine/glm53-prefill-0/server.log:15$", wide, re.M), wide
    assert re.search(r"^glm53-prefill-0\s+681,280$", narrow, re.M), narrow
    assert re.search(r"^    evidence: fleet/engine/glm53-prefill-0/server.log:15$", narrow, re.M), narrow


def test_a_long_list_points_to_the_file_that_holds_it():
    out = render(table("t", ("a", ("n", "right")), [[f"x{i}", i] for i in range(30)], limit=5, rest="evidence_joins.csv"))
    assert "x4" in out and "x5" not in out and "... and 25 more row(s): evidence_joins.csv" in out
