"""The tabular artifacts: CSV (every text cell formula-neutralised) and the Timesketch JSONL timeline."""
from __future__ import annotations

import csv
import io
import json
from typing import Any

from kvir.case.export import neutralise_cell
from kvir.report.model import IncidentModel
from kvir.report.records import TimelineEvent


def to_csv(header: list[str], rows: list[list[Any]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for r in rows:
        w.writerow(["" if v is None else neutralise_cell(v) if isinstance(v, str) else v for v in r])
    return buf.getvalue()


TIMELINE_COLUMNS = ["datetime", "timestamp_desc", "message", "title", "category", "actor", "origin", "source",
                    "evidence", "description", "visibility", "conflicts", "notes", "related_request_ids", "event_id"]


def _message(e: TimelineEvent) -> str:
    return e.title + (f": {e.description}" if e.description else "")


def timeline_csv(m: IncidentModel) -> str:
    """The timeline as CSV (Timesketch-importable columns first); every text cell formula-neutralised."""
    return to_csv(TIMELINE_COLUMNS, [[e.iso, e.timestamp_desc, _message(e), e.title, e.category, e.actor, e.origin,
                                      e.source, e.evidence, e.description, e.visibility, "; ".join(e.conflicts),
                                      "; ".join(e.notes), ";".join(e.related_request_ids), e.event_id]
                                     for e in m.timeline])


def timeline_jsonl(m: IncidentModel) -> str:
    """Timesketch JSONL: message, datetime, timestamp_desc (mandatory), timestamp (µs), plus kvir's fields."""
    lines = []
    for e in m.timeline:
        rec = {"message": _message(e), "datetime": e.iso, "timestamp": int(e.ts.timestamp() * 1_000_000),
               "timestamp_desc": e.timestamp_desc, "data_type": "kvir:timeline:event", "event_id": e.event_id,
               "title": e.title, "category": e.category, "actor": e.actor, "origin": e.origin, "kind": e.kind,
               "source": e.source, "evidence": e.evidence, "visibility": e.visibility,
               "related_request_ids": list(e.related_request_ids), "conflicts": e.conflicts, "notes": e.notes,
               "tag": ["conflict"] if e.conflicts else []}
        lines.append(json.dumps(rec, ensure_ascii=False, sort_keys=True))
    return "\n".join(lines) + ("\n" if lines else "")
