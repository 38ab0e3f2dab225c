"""The search for text where none may be: every file of a case (its bytes), every string a table of its
database holds (DuckDB compresses strings, so the file alone would not show them), and the terminal's
output, for every n-character window of every text given (as written and normalised)."""
from __future__ import annotations

from pathlib import Path

import duckdb

N = 16


def windows(texts: list[str], n: int = N) -> set[str]:
    out = set()
    for t in texts:
        for form in (t, " ".join(t.lower().split())):
            out |= {form[i:i + n] for i in range(0, max(len(form) - n + 1, 0))}
    return {w for w in out if len(w.strip()) == n and len(set(w)) > 3}    # runs of one character say nothing


def case_strings(case_dir: Path) -> str:
    """Every string value of every table and view column of the case's database, joined."""
    con = duckdb.connect(str(case_dir / "case.duckdb"), read_only=True)
    parts = []
    try:
        rels = con.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'").fetchall()
        for (name,) in rels:
            try:
                rows = con.execute(f'SELECT * FROM "{name}"').fetchall()
            except duckdb.Error:
                continue                 # a view over files elsewhere (a lake)
            for row in rows:
                parts.extend(str(v) for v in row if v is not None)
    finally:
        con.close()
    return "\x00".join(parts)


def leaks(case_dir: Path, texts: list[str], also: list[str] = (), n: int = N) -> list[tuple[str, str]]:
    """(where, window) for each window of the texts found in the case or in `also` (terminal output)."""
    found = []
    haystacks: list[tuple[str, bytes]] = [(str(p.relative_to(case_dir)), p.read_bytes())
                                          for p in sorted(case_dir.rglob("*")) if p.is_file()]
    if (case_dir / "case.duckdb").is_file():
        haystacks.append(("case.duckdb tables", case_strings(case_dir).encode()))
    haystacks += [(f"output {i}", s.encode()) for i, s in enumerate(also)]
    for w in sorted(windows(texts, n)):
        b = w.encode()
        for where, data in haystacks:
            if b in data:
                found.append((where, w))
    return found
