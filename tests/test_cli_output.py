"""What kvir shows a person: help without lost words, one error line, and log-derived text that can neither
drive the terminal (ANSI / OSC escape sequences, bidi overrides) nor be read as rich markup."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import click
import typer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.text import Text
from typer.testing import CliRunner

from kvir.cli import present
from kvir.cli.app import app
from tests.conftest import write

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()


def _commands() -> dict[str, click.Command]:
    group = typer.main.get_command(app)
    return {name: cmd for name, cmd in group.commands.items()}


def _flat(text: str) -> str:
    """Help without its layout: Click wraps lines, also right after a hyphen, so all whitespace goes."""
    return "".join(text.split())


def test_help_keeps_every_word_of_every_option_and_shows_no_bool_metavar():
    for name, cmd in _commands().items():
        res = runner.invoke(app, [name, "--help"], terminal_width=200)
        assert res.exit_code == 0, name
        out = _flat(res.output)
        for p in cmd.params:
            if getattr(p, "help", None):
                assert _flat(p.help) in out, f"kvir {name} --help lost words of: {p.help}"
        assert "<bool>" not in res.output, f"kvir {name} --help shows a flag as <bool>"
        assert _flat(cmd.help.split("\n\n")[0]) in out, name
    # the words rich markup used to swallow
    assert "[disclosure]" in runner.invoke(app, ["report", "--help"], terminal_width=200).output
    assert "[[sources]]" in _flat(runner.invoke(app, ["triage", "--help"], terminal_width=200).output)


def test_help_cites_only_files_that_exist():
    cited = set()
    for name in _commands():
        out = runner.invoke(app, [name, "--help"], terminal_width=400).output
        cited |= set(re.findall(r"\b([\w./-]+\.(?:md|py|sql|j2|toml))\b", out))
    cited -= {"incident.toml", "inventory.toml"}          # the user's own files
    missing = [c for c in cited if not (ROOT / c).exists() and not list(ROOT.rglob(Path(c).name))]
    assert not missing, missing


HOSTILE = ["\x1b[31mred\x1b[0m", "\x1b]8;;https://evil.example/\x07click\x1b]8;;\x07", "[link=https://x]y[/link]",
           "[/x]", "[bold]", "a\u202eb", "tab\there", "new\nline", "\x07bell", "[[sources]]"]


def _assert_inert(output: str) -> None:
    assert "\x1b" not in output and "\x07" not in output and "\u202e" not in output


def test_primitives_show_hostile_text_literally():
    for h in HOSTILE:
        c = present.cell(h)
        assert isinstance(c, Text) and "\x1b" not in c.plain and "\n" not in c.plain
        assert present.cell(h).plain == present.show(h)
    assert present.show("[link=x]y[/link]") == "[link=x]y[/link]"      # markup stays text
    assert present.show("\x1b[31m") == "\\x1b[31m" and present.show("a\u202eb") == "a\\u202eb"


PIECES = st.lists(st.sampled_from(list("ab[]/=\x1b\x07\u202e\n\t;:") + ["[link=", "[/", "]8;;"]), max_size=12).map("".join)


@settings(max_examples=40, deadline=None)
@given(PIECES)
def test_the_error_path_is_one_inert_line(text):
    res = runner.invoke(app, ["triage", "-i", f"/nonexistent/{text}.toml", "-o", "/tmp/kvir-never"])
    assert res.exit_code == 2
    err = res.stderr
    _assert_inert(err)
    assert err.startswith("kvir: ") and err.count("\n") == 1, repr(err)


def test_hostile_file_names_and_ids_reach_the_terminal_inert(spec, tmp_path):
    from tests.conftest import sglang_finished as fin

    name = "[/x]\x1b]8;;http://e/\x07[link=http://e]n[/link]\u202e.jsonl"
    logs = tmp_path / "logs"
    write(logs / name, fin("2026-08-30T10:00:00", "\x1b[2Jrid[/]", 700000) + "\n")
    res = runner.invoke(app, ["triage", "-i", str(spec()), "-o", str(tmp_path / "c"), "--source-tz", "UTC", str(logs)],
                        env={"COLUMNS": "400"})
    assert res.exit_code == 0, res.output
    _assert_inert(res.stderr)
    # shown as text (not a hyperlink, not swallowed as markup), the escapes visible; tables fold long cells
    compact = re.sub(r"[\s│┃]", "", res.stderr)
    assert "[/x]\\x1b]8;;http:/e/\\x07[link=http:/e]n[/link]\\u202e.jsonl" in compact   # a path: "//" reads as "/"
    out = runner.invoke(app, ["triage", "-i", str(spec()), "-o", str(tmp_path / "c2"), "--source-tz", "UTC",
                              "--json", "-q", str(logs)])
    assert json.loads(out.stdout)["summary"]["affected"] == 1


@pytest.mark.slow   # a property test over 15 audit runs (~9 s): its own step (pytest -m slow)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(node=PIECES.filter(bool))
def test_audit_tables_show_node_names_inert(tmp_path_factory, node):
    d = tmp_path_factory.mktemp("audit")
    log = d / "server.log"
    log.write_text("[2026-08-26 22:10:00] max_total_num_tokens=681280, chunked_prefill_size=8192, "
                   "max_prefill_tokens=16384, max_running_requests=256, context_len=1048576\n")
    inv = d / "inventory.toml"
    inv.write_text(f'[[node]]\nname = {json.dumps(node)}\nrole = "prefill"\nsource_tz = "UTC"\nlogs = ["server.log"]\n')
    res = runner.invoke(app, ["audit", str(log), "--inventory", str(inv)], env={"COLUMNS": "400"})
    assert res.exit_code in (0, 2), res.output
    _assert_inert(res.stderr)


def test_the_zone_column_says_where_utc_comes_from(spec, tmp_path):
    from kvir.cli.present.triage import zone_shown

    # what each format's times are, from its documentation, not from the registry under test
    assert zone_shown({"format": "sglang-json", "source_tz": "America/Chicago"}) == "America/Chicago"
    assert zone_shown({"format": "litellm", "source_tz": "America/Chicago"}) == "UTC (by format)"
    assert zone_shown({"format": "cloudflare-gateway", "source_tz": "America/Chicago"}) == "UTC (from the records)"
    assert zone_shown({"format": "generic-csv", "source_tz": None}) == "-"
