"""`kvir detect`: detection content from an incident's mechanism (or any mechanism) and its runtime signals:
Sigma rules (with Loki, DuckDB and Timesketch conversions) and Prometheus alerting rules (kvir.detect.run), and
a retro-hunt of the same rules over logs (`hunt`).

    from kvir.detect import content, write, hunt
    write(content(spec), "detections/")
    hunt(content(spec), ["logs/"], source_tz="America/Chicago")   # [(rule, level, hits, first hit)]
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvir.detect.run import Content, content, sigma_rules, write

__all__ = ["content", "write", "hunt", "Hit", "Content", "sigma_rules"]


@dataclass(frozen=True)
class Hit:
    rule: str
    level: str
    count: int                  # matching events (a correlation: groups)
    first: dict[str, Any] | None   # the first (file, line_no, node, rid; a correlation: its group and times)


def hunt(c: Content, paths: list[str | Path], *, source_tz: str | None = None, year: int | None = None,
         events_jsonl: str | Path | None = None) -> list[Hit]:
    """Every rule of `c` (pySigma's DuckDB conversion) over the logs' events; `events_jsonl`: also write the events
    as Timesketch JSONL (message, datetime, timestamp_desc, data_type, node, rid, file, line_no)."""
    from kvir.detect.convert import duckdb_sql
    from kvir.detect.events import events

    rules = sigma_rules(c)
    levels = {r["name"]: r["level"] for r in rules}
    con = events(paths, source_tz=source_tz, year=year)
    try:
        out = []
        for name, sql in duckdb_sql(rules):
            cur = con.execute(f"SELECT * FROM ({sql}) AS hits")
            cols = [d[0] for d in cur.description]
            rows = cur.fetchall()
            keep = [k for k in ("file", "line_no", "node", "rid", "first_event", "last_event") if k in cols]
            first = None
            if rows:
                best = min(rows, key=lambda r: tuple(str(r[cols.index(k)]) for k in keep))
                first = {k: best[cols.index(k)] for k in keep}
            out.append(Hit(name, levels[name], len(rows), first))
        if events_jsonl is not None:
            _timesketch(con, Path(events_jsonl))
        return out
    finally:
        con.close()


def _timesketch(con, path: Path) -> None:
    """The events as Timesketch imports them: JSONL with message, datetime (ISO 8601) and timestamp_desc."""
    con.execute("""COPY (SELECT message, strftime(timestamp AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%f') || 'Z' AS datetime,
                           'Log line' AS timestamp_desc,
                           'kvir:' || coalesce(CASE WHEN message LIKE '%(APIServer pid=%' OR message LIKE '%(EngineCore%'
                                                    THEN 'vllm' END, 'sglang') || ':line' AS data_type,
                           node, rid, file, line_no
                    FROM logs WHERE timestamp IS NOT NULL ORDER BY timestamp, file, line_no)
                   TO '""" + str(path).replace("'", "''") + "' (FORMAT json)")
