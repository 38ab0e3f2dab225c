"""Sigma rules converted by pySigma's backends: Loki (LogQL line filters; the `ruler` format gives Loki ruler
alert groups) and DuckDB (SQL over events with a `message` field; keyword detections become `message` matches
through a small processing pipeline, as Timesketch searches its events' message), and the field mapping that
Timesketch's Sigma analyzer needs for kvir's log sources.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

LOKI_DEFAULT_SELECTOR = '{job=~".+"}'


def _collection(rules: list[dict[str, Any]]):
    import yaml
    from sigma.collection import SigmaCollection

    return SigmaCollection.from_yaml(yaml.safe_dump_all(rules, sort_keys=False))


def _keywords_to_message():
    """A pySigma pipeline: a keyword (a value with no field) is a substring of the event's `message`."""
    from sigma.processing.pipeline import ProcessingItem, ProcessingPipeline
    from sigma.processing.transformations.base import DetectionItemTransformation
    from sigma.types import SigmaString

    @dataclass
    class KeywordsToMessage(DetectionItemTransformation):
        def apply_detection_item(self, d) -> None:
            if d.field is None:
                d.field = "message"
                d.value = [SigmaString("*") + v + SigmaString("*") if isinstance(v, SigmaString) else v
                           for v in d.value]

    return ProcessingPipeline(name="kvir keywords -> message", priority=10,
                              items=[ProcessingItem(KeywordsToMessage(), identifier="kvir_keywords_to_message")])


def duckdb_sql(rules: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(rule name, DuckDB SQL over the table `logs`) for every rule; a correlation's building blocks are
    converted inside it."""
    from sigma_backend_duckdb import DuckDBBackend

    backend = DuckDBBackend(processing_pipeline=_keywords_to_message())
    out = []
    for r in rules:
        refs = [x for x in rules if x["name"] in r.get("correlation", {}).get("rules", [])]
        queries = backend.convert(_collection(refs + [r]))
        out.append((r["name"], queries[-1]))
    return out


def loki(rules: list[dict[str, Any]], selector: str | None = None) -> tuple[str, str]:
    """(Loki ruler YAML of the alerting line rules, LogQL queries of every line rule), `selector` in place of the
    backend's catch-all stream selector."""
    from sigma.backends.loki import LogQLBackend

    lines = [r for r in rules if "correlation" not in r]
    alerting = [r for r in lines if "building block" not in r["description"]]
    backend = LogQLBackend()
    ruler = backend.convert(_collection(alerting), "ruler") if alerting else "groups: []\n"
    queries = backend.convert(_collection(lines)) if lines else []
    sel = selector or LOKI_DEFAULT_SELECTOR
    text = "".join(f"# {r['name']} ({r['level']})\n{q}\n\n" for r, q in zip(lines, queries))
    return ruler.replace(LOKI_DEFAULT_SELECTOR, sel), text.replace(LOKI_DEFAULT_SELECTOR, sel)


def timesketch_config(content) -> dict[str, Any]:
    """Timesketch's Sigma analyzer field mapping (sigma_config.yaml) for kvir's log sources: each engine's lines,
    imported as kvir detect --hunt --timesketch writes them (data_type kvir:<engine>:line, the line as message)."""
    engines = sorted({s.engine for _, s in content.lines()})
    return {"title": "kvir engine logs", "order": 20, "backends": ["opensearch"],
            "logsources": {e: {"product": e, "service": "server", "conditions": {"data_type": f"kvir:{e}:line"}}
                           for e in engines},
            "fieldmappings": {"rid": "rid", "node": "node"}}
