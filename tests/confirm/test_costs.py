"""Costs grow with the input, never with hits x sources: every statement of kvir confirm's queries is planned
with hash joins, as-of joins and unnests only, never a cross product or a nested-loop (range) join. DuckDB
plans tiny inputs as nested loops on purpose; both thresholds are set to 0 here so that the plan shown is
the one a large input gets."""
from __future__ import annotations

import re

import duckdb

from kvir.confirm.fingerprint import Shingling
from kvir.confirm.run import Thresholds
from kvir.core.sql import load
from tests.confirm.helpers import confirmed
from tests.confirm.test_confirm_e2e import base

QUERIES = ("confirm/matches", "confirm/coverage", "confirm/verdicts", "confirm/accounts", "confirm/needles",
           "confirm/export")
FORBIDDEN = ("Cross Product", "Nested Loop Join", "Blockwise NL Join", "Piecewise Merge Join")


def test_no_statement_joins_pairs(tmp_path):
    r = confirmed(tmp_path, base(), needles=["Operation Kingfisher"])
    r.case.close()
    con = duckdb.connect(str(tmp_path / "case" / "case.duckdb"))
    con.execute("SET asof_loop_join_threshold = 0")
    con.execute("SET nested_loop_join_threshold = 0")
    t, sh = Thresholds(), Shingling()
    params = {"window_s": 3600.0, "any_instance": False, "max_df": t.max_df, "w": sh.w, "k": sh.k,
              "threshold": t.score, "fffd_min": t.fffd_min, "fffd_share": t.fffd_share,
              "symbol_share": t.symbol_share, "repeat_kept": t.repeat_kept, "repeat_share": t.repeat_share,
              "script_letters": t.script_letters, "script_share": t.script_share}
    seen = set()
    for name in QUERIES:
        for st in con.extract_statements(load(name).text):
            p = {k: params[k] for k in st.named_parameters}
            plan = "\n".join(row[1] for row in con.execute("EXPLAIN " + st.query, p).fetchall())
            ops = set(re.findall(r"─ ([A-Za-z][A-Za-z ]*?) [─┴┬]", plan))
            seen |= ops
            assert not ops & set(FORBIDDEN), (name, st.query[:200], ops)
            con.execute(st.query, p)          # the next statement reads what this one made
    assert {"Hash Join", "Asof Join"} <= seen
    con.close()
