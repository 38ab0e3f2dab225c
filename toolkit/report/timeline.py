"""One timeline: the hand-entered events of incident.toml merged with events derived from the case.

Derived events (each names its query and, where there is one, the log record behind it):
  first-affected / last-affected   the first and the last affected response (report/affected_span)
  test-request                     first and last request of each labelled account (report/labelled_requests)
  node-fixed / all-prefill-fixed   each node's restart onto a config whose KV pool holds the whole context,
                                   and the moment the last prefill node got there (report/node_fixes, audit)
  model-private / model-public     the pause in customer traffic (report/traffic_gap): INFERRED from traffic,
                                   category "inferred", internal; never a mitigation (a pause is not proof the
                                   model was made private), only a check of a hand event that says so; its end
                                   only when a customer request inside the window ends it
  runtime-indicator                first sighting of each audit runtime indicator per node (report/runtime_events)

Mitigations come only from incident.toml or from a log line that shows one (a node's start-up on a pool that
holds the context). Every derived event says what it is derived from (timestamp_desc, source, evidence).

A hand event is paired with a derived event by its title (HAND_KINDS). When the two disagree by more
than [disclosure] timeline_tolerance_minutes, or the data contradicts the hand event (customer traffic
served after "made private", an affected response after "all prefill nodes fixed"), the conflict is
written on both events and listed in every document that shows the timeline. Nothing is dropped.
"""
from __future__ import annotations

import datetime as dt
import re
from typing import TYPE_CHECKING

from kvir.case.store import Case
from kvir.report.read import EvidenceNames, rows
from kvir.report.records import TimelineEvent
from kvir.report.times import iso, utc

if TYPE_CHECKING:
    from kvir.report.model import IncidentModel

# title patterns that say which derived event a hand event describes (first match wins)
HAND_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("model-private", re.compile(r"\bprivate\b", re.I)),
    ("model-public", re.compile(r"\bpublic again\b|\bmade public\b|\bback (?:online|public)\b|\bre-?enabled\b", re.I)),
    ("all-prefill-fixed", re.compile(r"\bprefill\b.*\bfix|\bfix\w*\b.*\bprefill\b", re.I)),
    ("first-affected", re.compile(r"\bfirst affected\b|\bexposure (?:began|started|start)\b", re.I)),
    ("last-affected", re.compile(r"\blast affected\b|\bexposure (?:ended|stopped|end)\b", re.I)),
)

Q = "queries/report/{}.sql"


def hand_kind(title: str) -> str | None:
    for kind, pat in HAND_KINDS:
        if pat.search(title):
            return kind
    return None


def _fmt_delta(seconds: float) -> str:
    s = abs(int(round(seconds)))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    parts = [f"{h} h" if h else "", f"{m} min" if m else "", f"{sec} s" if sec and not h else ""]
    return " ".join(p for p in parts if p) or "0 s"


def hand_events(case: Case) -> list[TimelineEvent]:
    if not case.has("hand_events"):
        return []
    rows = case.con.execute("SELECT seq, ts, title, actor, category, description, visibility, source "
                            "FROM hand_events ORDER BY ts, seq").fetchall()
    out = []
    for _seq, ts, title, actor, cat, desc, vis, src in rows:
        out.append(TimelineEvent(utc(ts), title, cat or "", actor or "", "hand", src, "",
                                 "Event time (entered by hand in incident.toml)", hand_kind(title) or "hand",
                                 desc or "", vis or "internal"))
    return out


def served_on(prefill: str | None, decode: str | None) -> str:
    """The nodes that served a response, prefill then decode, each "unknown" where the logs do not name it (the
    words of a mechanism whose responses cross nodes: its story's served_on)."""
    if not prefill and not decode:
        return "on unknown nodes (the logs do not name them)"
    return f"on {prefill or 'unknown'} → {decode or 'unknown'}"


def _tokens(n: int | None) -> str:
    return "unknown" if n is None else f"{n:,}"


def derived_events(case: Case, model: "IncidentModel") -> list[TimelineEvent]:
    ev: list[TimelineEvent] = []
    names = EvidenceNames.of(case)
    for r in rows(case, "affected_span"):
        who = r["account_label"] or "a customer account"
        which = r["which"]
        ev.append(TimelineEvent(
            utc(r["ts"]), f"{'First' if which == 'first' else 'Last'} affected response (in the request logs)", "exposure", who, "data",
            Q.format("affected_span"), names.evidence(r["source_file"], r["source_line"]),
            "Request start of the affected response", f"{which}-affected",
            f"request {r['request_id']} of account {r['account_id'] or 'unknown'} "
            + model.story.served_on(r["prefill_node"], r["decode_node"]), "public", (r["request_id"],)))
    for r in rows(case, "labelled_requests", {"models": list(model.facts.model_names)}):
        ev.append(TimelineEvent(
            utc(r["ts"]), f"{'First' if r['which'] == 'first' else 'Last'} request of the {r['label']} (in the request logs)", "confirmation",
            r["label"], "data", Q.format("labelled_requests"), names.evidence(r["source_file"], r["source_line"]),
            "Request start", "test-request",
            f"request {r['request_id']} ({_tokens(r['prompt_tokens'])} prompt tokens, "
            f"{r['outcome'] or 'outcome unknown'}); account {r['account_id']} sent {r['n_requests']} request(s) to the "
            f"model, {r['n_affected']} affected", "internal", (r["request_id"],)))
    prefill = [f for f in model.node_fixes if f.role == "prefill" and f.vulnerable_from is not None]
    for f in model.node_fixes:
        if f.fixed_at is None:
            continue
        ev.append(TimelineEvent(
            f.fixed_at, f"{f.node} restarted on the fixed config", "mitigation", f.node, "data",
            Q.format("node_fixes"), f.fixed_evidence, "Node start-up (start-up log)", "node-fixed",
            f"{f.role or 'node'} {f.node}: KV pool {f.fixed_pool:,} tokens holds the context of {f.fixed_context:,} "
            f"(was {f.vulnerable_pool:,} < {f.vulnerable_context:,}); version {f.fixed_version or 'unknown'}",
            "internal"))
    if prefill and all(f.fixed_at is not None for f in prefill):
        last = max(prefill, key=lambda f: f.fixed_at)
        ev.append(TimelineEvent(
            last.fixed_at, "All prefill nodes on the fixed config", "mitigation", "fleet", "data",
            Q.format("node_fixes"), last.fixed_evidence, "Start-up of the last prefill node to be fixed",
            "all-prefill-fixed", f"{len(prefill)} prefill node(s) had a KV pool smaller than the context; "
                                 f"the last to restart on the fixed config was {last.node}", "public"))
    g = model.traffic_gap
    if g is not None and g.before_ts <= model.facts.window_end:
        dur = _fmt_delta(g.gap_s)
        inside = g.after_ts <= model.facts.window_end
        ev.append(TimelineEvent(
            g.before_ts, f"Pause in customer traffic begins (inferred from the request logs: no customer request "
                         f"for {dur} after this one)", "inferred", "request logs", "data", Q.format("traffic_gap"),
            g.before_evidence, "Request start of the last customer request before the pause (inferred event)",
            "model-private", f"request {g.before_id}; a pause is not proof that the model was made private",
            "internal", (g.before_id,)))
        if inside:
            ev.append(TimelineEvent(
                g.after_ts, "Pause in customer traffic ends (inferred from the request logs: first customer request "
                            "after it)", "inferred", "request logs", "data", Q.format("traffic_gap"), g.after_evidence,
                "Request start of the first customer request after the pause (inferred event)", "model-public",
                f"request {g.after_id}", "internal", (g.after_id,)))
    for i in model.indicators:
        if i.first_ts is None:
            continue
        ev.append(TimelineEvent(
            i.first_ts, f"Runtime indicator {i.indicator} first seen on {i.node}", "detection", i.node or "engine",
            "data", Q.format("runtime_events"), i.evidence, "First sighting in the engine log", "runtime-indicator",
            f"{i.n} sighting(s) until {iso(i.last_ts)}", "internal"))
    return ev


def _check(hand: TimelineEvent, data: list[TimelineEvent], model: "IncidentModel") -> None:
    """Write conflicts (and pairing notes) on a hand event and the derived event it describes."""
    tol = model.disclosure.timeline_tolerance_minutes * 60
    kind = hand.kind
    if kind == "hand":
        return
    same = [d for d in data if d.kind == kind]
    if kind in ("model-private", "model-public"):
        g = model.traffic_gap
        if g is None:
            hand.notes.append("no pause in customer traffic was found to confirm it (queries/report/traffic_gap.sql)")
            return
        if kind == "model-private" and hand.ts < g.before_ts - dt.timedelta(seconds=tol):
            _conflict(hand, same, f"customer request {g.before_id} was served at {iso(g.before_ts)}, "
                                  f"{_fmt_delta((g.before_ts - hand.ts).total_seconds())} after the model was "
                                  f"made private by this event ({g.before_evidence})")
        elif kind == "model-public" and hand.ts > g.after_ts + dt.timedelta(seconds=tol):
            _conflict(hand, same, f"customer request {g.after_id} was served at {iso(g.after_ts)}, "
                                  f"{_fmt_delta((hand.ts - g.after_ts).total_seconds())} before the model was "
                                  f"public again by this event ({g.after_evidence})")
        elif not (g.before_ts - dt.timedelta(seconds=tol) <= hand.ts <= g.after_ts + dt.timedelta(seconds=tol)):
            _conflict(hand, same, f"the pause in customer traffic runs from {iso(g.before_ts)} to {iso(g.after_ts)}; "
                                  f"this event at {iso(hand.ts)} lies outside it")
        else:
            for d in same:
                d.notes.append(f"agrees with the hand-entered event '{hand.title}' at {iso(hand.ts)}")
            hand.notes.append("confirmed by the traffic (queries/report/traffic_gap.sql)")
        return
    if not same:
        hand.notes.append("no derived event to confirm it"
                          + (" (audit not run)" if kind == "all-prefill-fixed" and not model.node_fixes else ""))
    for d in same:
        delta = (d.ts - hand.ts).total_seconds()
        if abs(delta) > tol:
            _conflict(hand, [d], f"incident.toml says {iso(hand.ts)}; the data ({d.source}"
                                 f"{', ' + d.evidence if d.evidence else ''}) says {iso(d.ts)}, "
                                 f"{_fmt_delta(delta)} {'later' if delta > 0 else 'earlier'}")
        else:
            d.notes.append(f"agrees with the hand-entered event '{hand.title}' at {iso(hand.ts)}")
            hand.notes.append(f"confirmed by {d.source}")
    if kind == "all-prefill-fixed" and model.counts.last_affected and model.counts.last_affected > hand.ts:
        _conflict(hand, same, f"an affected response was served at {iso(model.counts.last_affected)}, after all "
                              f"prefill nodes were fixed by this event (queries/triage/summary.sql)")


def _conflict(hand: TimelineEvent, data: list[TimelineEvent], msg: str) -> None:
    hand.conflicts.append(msg)
    for d in data:
        d.conflicts.append(f"hand-entered event '{hand.title}' ({iso(hand.ts)}): {msg}")


def build_timeline(case: Case, model: "IncidentModel") -> list[TimelineEvent]:
    hand = hand_events(case)
    data = derived_events(case, model)
    for h in hand:
        _check(h, data, model)
    events = hand + data
    events.sort(key=lambda e: (e.ts, 0 if e.origin == "hand" else 1, e.title))
    return events


def store_timeline(case: Case, events: list[TimelineEvent]) -> None:
    """The merged timeline as the case table `events` (the canonical record other tools can query)."""
    con = case.con
    con.execute("CREATE OR REPLACE TABLE events (event_id VARCHAR, ts TIMESTAMPTZ, title VARCHAR, category VARCHAR, "
                "actor VARCHAR, origin VARCHAR, kind VARCHAR, source VARCHAR, evidence VARCHAR, "
                "timestamp_desc VARCHAR, description VARCHAR, visibility VARCHAR, related_request_ids VARCHAR[], "
                "conflicts VARCHAR[], notes VARCHAR[])")
    for e in events:
        con.execute("INSERT INTO events VALUES ($id, $ts, $title, $cat, $actor, $origin, $kind, $source, $evidence, "
                    "$desc_t, $desc, $vis, $rel, $conf, $notes)",
                    {"id": e.event_id, "ts": e.ts, "title": e.title, "cat": e.category, "actor": e.actor,
                     "origin": e.origin, "kind": e.kind, "source": e.source, "evidence": e.evidence,
                     "desc_t": e.timestamp_desc, "desc": e.description, "vis": e.visibility,
                     "rel": list(e.related_request_ids), "conf": list(e.conflicts), "notes": list(e.notes)})
