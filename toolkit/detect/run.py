"""kvir detect: the detection content of an incident's mechanism (or any mechanism), from its runtime signals.

    DIR/sigma/*.yml                  Sigma rules and correlation rules (the specification's YAML)
    DIR/loki/rules.yml               Loki ruler alerts (pySigma's Loki backend, `ruler` format) + queries.logql
    DIR/duckdb/rules.sql             the same rules as DuckDB SQL over events (pySigma's DuckDB backend): a
                                     retro-hunt over logs kvir detect --hunt normalises (kvir.detect.events)
    DIR/timesketch/                  the Sigma rules for Timesketch's Sigma analyzer, with its field mapping
    DIR/prometheus/kvir-alerts.yml   Prometheus alerting rules over the engines' counters and kvir probe's
    DIR/README.md                    what each file holds, and what the signals cannot show

pySigma and its backends are the `kvir[detect]` extra (imported here, not by any other command).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kvir.audit.signals import CounterAlert, Correlation, LogSignal, Signals

SHARED = "transfer"                   # the shared preflight table's signals (no registered mechanism yet)


@dataclass
class Content:
    """Every signal kvir detect emits, by source (a mechanism's name or SHARED)."""

    sources: dict[str, Signals] = field(default_factory=dict)
    incident: str | None = None
    engine: str | None = None         # only this engine's signals (the spec's), None: every engine's

    def lines(self) -> list[tuple[str, LogSignal]]:
        return [(src, s) for src, sig in self.sources.items() for s in sig.lines
                if self.engine in (None, s.engine)]

    def correlations(self) -> list[tuple[str, Correlation]]:
        ids = {s.signal_id for _, s in self.lines()}
        return [(src, c) for src, sig in self.sources.items() for c in sig.correlations
                if all(x in ids for x in c.signals)]

    def counters(self) -> dict[str, tuple[CounterAlert, ...]]:
        from kvir.detect.prometheus import PROBE_ALERTS

        out = {src: sig.counters for src, sig in self.sources.items()}
        out["probe"] = PROBE_ALERTS
        return out


def content(spec=None, mechanism: str | None = None) -> Content:
    """The signals of the spec's mechanism (and engine, when the spec names one), of `mechanism`, or of every
    registered mechanism; the shared transfer signals always."""
    from kvir.audit.plugin import audit_part, audit_parts
    from kvir.preflight.transfer_rules import SIGNALS
    from kvir.spec.mechanism import mechanism as registered

    if spec is not None:
        names = [spec.mech.name]
    elif mechanism is not None:
        names = [registered(mechanism).name]
    else:
        names = list(audit_parts())
    c = Content({n: audit_part(n).signals for n in names}, spec.id if spec is not None else None,
                _engine(spec))
    c.sources[SHARED] = SIGNALS
    return c


def _engine(spec) -> str | None:
    if spec is None:
        return None
    eng = spec.mech.spec.engine(spec.params) if spec.params is not None else None
    return eng if eng in ("sglang", "vllm") else None


def sigma_rules(c: Content) -> list[dict[str, Any]]:
    from kvir.detect.sigma import correlation_rule, line_rule

    return ([line_rule(s, src, c.incident) for src, s in c.lines()]
            + [correlation_rule(x, src, c.incident) for src, x in c.correlations()])


def write(c: Content, out: str | Path, *, loki_selector: str | None = None) -> list[Path]:
    """Write every output under `out`; the paths written."""
    import yaml

    from kvir.detect.convert import duckdb_sql, loki, timesketch_config
    from kvir.detect.prometheus import rules_file

    root = Path(out)
    written: list[Path] = []

    def put(rel: str, text: str) -> None:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        written.append(p)

    rules = sigma_rules(c)
    for r in rules:
        text = yaml.safe_dump(r, sort_keys=False, allow_unicode=True)
        put(f"sigma/{r['name']}.yml", text)
        put(f"timesketch/{r['name']}.yml", text)
    put("timesketch/sigma_config.yaml", yaml.safe_dump(timesketch_config(c), sort_keys=False))
    ruler, queries = loki(rules, loki_selector)
    put("loki/rules.yml", ruler)
    put("loki/queries.logql", queries)
    put("duckdb/rules.sql", "".join(f"-- {name}\n{sql};\n\n" for name, sql in duckdb_sql(rules)))
    put("prometheus/kvir-alerts.yml", yaml.safe_dump(rules_file(c.counters()), sort_keys=False))
    put("README.md", _readme(c, rules))
    return written


def _readme(c: Content, rules: list[dict[str, Any]]) -> str:
    lines = ["# kvir detect", "", f"Incident: {c.incident or 'none (every signal of the mechanisms asked for)'}",
             "", "| rule | level | source |", "|---|---|---|"]
    lines += [f"| {r['name']} | {r['level']} | {', '.join(r['tags'])} |" for r in rules]
    lines += ["", "Loki gets the line rules (keyword filters over the raw lines); correlation rules need their "
              "group-by field (`rid`, `node`) as an event field, which DuckDB (duckdb/rules.sql over kvir detect "
              "--hunt's events) and Timesketch have and a Loki line filter has not, so pySigma's Loki backend is "
              "not given them.", ""]
    lines += [f"- {n}" for sig in c.sources.values() for n in sig.notes]
    return "\n".join(lines) + "\n"
