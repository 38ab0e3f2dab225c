"""Case exports are safe to open: no spreadsheet formulas, no terminal control sequences, times in UTC."""
from __future__ import annotations

import csv

import duckdb
import pytest

from kvir.case.export import neutralise_cell, write_csv


def test_csv_cells_neither_run_as_formulas_nor_drive_a_terminal(tmp_path):
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT * FROM (VALUES (1, '=HYPERLINK(\"http://x\")'), (2, chr(27) || '[2J' || 'wipe'), "
                "(3, chr(27) || ']8;;http://e/' || chr(7) || 'link'), (4, 'two' || chr(10) || 'lines'), "
                "(5, '@SUM(A1)' || chr(155)), (6, 'plain é 中'), (7, NULL)) v(i, s)")
    path = write_csv(con, "t", tmp_path / "t.csv")
    raw = path.read_text(encoding="utf-8")
    assert "\x1b" not in raw and "\x07" not in raw and "\x9b" not in raw
    rows = {int(r["i"]): r["s"] for r in csv.DictReader(path.open(encoding="utf-8"))}
    assert rows == {1: "'=HYPERLINK(\"http://x\")", 2: "\\x1b[2Jwipe", 3: "\\x1b]8;;http://e/\\x07link",
                    4: "two\nlines", 5: "'@SUM(A1)\\x9b", 6: "plain é 中", 7: ""}


def test_the_python_rule_matches_the_sql_rule():
    assert neutralise_cell("=1+1") == "'=1+1"
    assert neutralise_cell("\x1b[31mred") == "\\x1b[31mred"
    assert neutralise_cell("two\nlines\ttab") == "two\nlines\ttab"
    assert neutralise_cell("+\x07") == "'+\\x07"


def test_markdown_values_cannot_drive_a_terminal_or_add_markup():
    from kvir.report.markup import md_escape

    s = md_escape("acct\x1b]8;;http://e/\x07[x](y)\u202e|<b>\nz")
    assert "\x1b" not in s and "\x07" not in s and "\u202e" not in s and "\n" not in s
    assert s == "acct\\x1b\\]8;;http://e/\\x07\\[x\\](y)\\u202e\\|&lt;b&gt; z"


def test_a_view_and_a_table_export_the_same_neutralised_cells(tmp_path):
    """Only a table's columns that hold such a cell get the neutralising expression (a view's always do):
    either way every cell comes out the same."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT * FROM (VALUES (1, 'x', '=1', chr(27) || 'y', ['=a', 'b']), "
                "(2, NULL, 'ok', 'ok', ['c'])) v(i, clean, formula, control, parts)")
    con.execute("CREATE VIEW v AS SELECT * FROM t")
    expected = {1: {"clean": "x", "formula": "'=1", "control": "\\x1by", "parts": "'=a;b"},
                2: {"clean": "", "formula": "ok", "control": "ok", "parts": "c"}}
    for name in ("t", "v"):
        path = write_csv(con, name, tmp_path / f"{name}.csv")
        rows = {int(r.pop("i")): r for r in csv.DictReader(path.open(encoding="utf-8"))}
        assert rows == expected, name
    assert (tmp_path / "t.csv").read_bytes() == (tmp_path / "v.csv").read_bytes()


# Every first character OWASP's CSV-injection guidance lists (= + - @, tab, carriage return): each one alone
# in its own table, so that neither the SQL guard's cell test nor the column pre-check that decides which
# columns get it can miss one (issue #26 item 16: dropping '-' from either passed the whole suite).
OWASP_STARTS = ["=", "+", "-", "@", "\t", "\r"]


@pytest.mark.parametrize("first", OWASP_STARTS, ids=["eq", "plus", "minus", "at", "tab", "cr"])
def test_every_formula_start_is_neutralised_by_the_sql_guard(tmp_path, first):
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT * FROM (VALUES (1, $v), (2, 'plain')) v(i, cell)",
                {"v": first + "cmd|' /C calc'!A0"})
    path = write_csv(con, "t", tmp_path / "t.csv")
    rows = {int(r["i"]): r["cell"] for r in csv.DictReader(open(path, newline=""))}
    assert rows == {1: "'" + first + "cmd|' /C calc'!A0", 2: "plain"}


@pytest.mark.parametrize("first", OWASP_STARTS, ids=["eq", "plus", "minus", "at", "tab", "cr"])
def test_every_formula_start_is_neutralised_by_the_python_guard(first):
    assert neutralise_cell(first + "1+1") == "'" + first + "1+1"
    assert neutralise_cell("a" + first) == "a" + first          # only the first character decides
