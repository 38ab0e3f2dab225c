"""Case exports are safe to open: no spreadsheet formulas, no terminal control sequences, times in UTC."""
from __future__ import annotations

import csv

import duckdb

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
