"""The report's figures (matplotlib, Agg), drawn from the incident model only.

    prompt_lengths    prompt-length distribution of the model's requests in the window (affected apart),
                      with the prompt lengths that matter to the mechanism as vertical lines (its report part's
                      prompt_limits: e.g. the KV pool, the engine's limit and the context length)
    affected_time     affected responses per hour, with the timeline's events as vertical marks
    node_windows      each prefill node: its vulnerable-config period (audit) and its affected responses, for a
                      mechanism whose documents show the audit's node fixes (ReportPart.shows_node_fixes)

Each figure is PNG bytes; the HTML documents embed them as data: URIs (no external resource).
matplotlib is imported here only, when a report is rendered.

A figure with nothing to show (no prompt length, no affected response, no prefill node named in the
evidence) is not drawn (Figure.drawn is False): the pages show its title and the caption that says why,
and no PNG of it is written (its `png`, a note of that sentence, is for notebooks). Axes use plain numbers
(1,000 not 10³) and plain dates (Sep 1, 14:00); the prompt-length bins are split at the limit lines, so no
bar spans one.
"""
from __future__ import annotations

import base64
import datetime as dt
from dataclasses import dataclass

from kvir.report.markup import num
from kvir.report.model import IncidentModel
from kvir.report.plugin import PromptLimits, report_part
from kvir.report.plotting import (count_axis, date_axis, day_label, log_axis, note_png, plain_number, plt,
                                  png)


@dataclass(frozen=True)
class Figure:
    name: str
    title: str
    caption: str
    png: bytes
    drawn: bool = True            # False: nothing to show; the caption says why

    @property
    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")

    @property
    def file(self) -> str:
        return f"figures/{self.name}.png"


def not_drawn(name: str, title: str, why: str) -> Figure:
    """A figure with nothing to show: not drawn; the caption (and the PNG's one sentence) say why."""
    caption = f"Not drawn: {why}."
    return Figure(name, title, caption, note_png(f"{title}: not drawn, {why}."), drawn=False)


def _limits(m: IncidentModel) -> PromptLimits:
    return report_part(m.facts.mechanism.name).prompt_limits(m.facts)


def _limit_lines(limits: PromptLimits) -> list[tuple[int, str, str]]:
    """The mechanism's prompt lengths as (x, label, line style), left to right (unknown ones left out: no
    engine line where the engine is unknown); lines within 5 % of each other (one line on a log axis) share
    one label."""
    lines = sorted((x.tokens, f"{x.label} {x.tokens:,}", x.style) for x in limits.lines if x.tokens)
    out: list[tuple[int, str, str]] = []
    for x, label, style in lines:
        if out and abs(x - out[-1][0]) / out[-1][0] < 0.05:
            out[-1] = (out[-1][0], f"{out[-1][1]} / {label}", "-" if "-" in (style, out[-1][2]) else out[-1][2])
        else:
            out.append((x, label, style))
    return out


PROMPT_TITLE = "Prompt-length distribution"


def prompt_lengths(m: IncidentModel) -> Figure:
    if not m.histogram:
        return not_drawn("prompt_lengths", PROMPT_TITLE,
                         f"no request to {m.facts.model} in the window has a known prompt length")
    limits = _limits(m)
    return Figure("prompt_lengths", PROMPT_TITLE,
                  f"{_counted(m)} (queries/report/prompt_histogram.sql); {num(m.counts.affected)} affected."
                  + (f" Lines: {limits.caption}." if _limit_lines(limits) else ""),
                  png(prompt_lengths_figure(m)))


def _counted(m: IncidentModel) -> str:
    """What the histogram counts, against the headline count of requests to the model in the window (the
    triage's in_scope: one source for that number in every document); the histogram holds those whose
    prompt length is known."""
    n, scope = sum(b.n for b in m.histogram), m.counts.in_scope
    if scope is None:
        return f"{num(n)} requests to the model in the window with a known prompt length"
    if n == scope:
        return f"{num(scope)} requests to the model in the window"
    return f"{num(n)} of the {num(scope)} requests to the model in the window, those with a known prompt length"


def prompt_lengths_figure(m: IncidentModel):
    """The histogram (bins split at the limit lines: no bar spans one), the lines labelled above the plot,
    the legend below it."""
    fig, ax = plt().subplots(figsize=(7.5, 3.4))
    lo = [b.lo for b in m.histogram]
    width = [b.hi - b.lo for b in m.histogram]
    other = [b.n - b.n_affected for b in m.histogram]
    aff = [b.n_affected for b in m.histogram]
    ax.bar(lo, other, width=width, align="edge", color="#9aa9b8", label="not affected")
    ax.bar(lo, aff, width=width, bottom=other, align="edge", color="#c0392b", label="affected")
    ax.set_xscale("log")
    f = m.facts
    lines = _limit_lines(_limits(m))
    xs = [b.lo for b in m.histogram] + [b.hi for b in m.histogram] + [x for x, _, _ in lines]
    ax.set_xlim(min(xs) / 1.3, max(xs) * 1.3)
    log_axis(ax.xaxis, min(xs) / 1.3, max(xs) * 1.3)
    count_axis(ax, max(b.n for b in m.histogram))
    for i, (x, label, style) in enumerate(lines):
        ax.axvline(x, color="#222", linestyle=style, linewidth=1)
        # above the plot, horizontal: the first leftwards, the others rightwards one above the other
        ax.annotate(label, (x, 1.0), xycoords=("data", "axes fraction"), xytext=(-3 if i == 0 else 3, 3 + 10 * max(i - 1, 0)),
                    textcoords="offset points", ha="right" if i == 0 else "left", va="bottom", fontsize=7.5)
    ax.set_xlabel("prompt tokens (log scale)")
    ax.set_ylabel("requests")
    ax.set_title(f"Prompt lengths, {f.model}, {f.window_start:%Y-%m-%d} to {f.window_end:%Y-%m-%d} UTC",
                 pad=16 + 10 * max(len(lines) - 1, 1))
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2, frameon=False, fontsize=8)
    return fig


def _zoom_range(m: IncidentModel):
    """The response day: from 3 h before awareness (or the last affected response) to 1 h after the last
    event within two days of it."""
    start = m.disclosure.awareness_time or m.counts.last_affected
    if start is None:
        return None
    start = start - dt.timedelta(hours=3)
    later = [e.ts for e in m.timeline if start <= e.ts <= start + dt.timedelta(days=2)]
    return start, (max(later) if later else start + dt.timedelta(hours=6)) + dt.timedelta(hours=1)


HAND, DATA = "#1f4e79", "#6c7a89"


def _event_marks(ax, events, x0, x1) -> list[str]:
    """Each event as a vertical line with its number above the plot; a number that would touch an earlier
    one goes one row higher (so none overlaps another). Returns the key lines '1  13:22  Incident declared'."""
    span = (x1 - x0).total_seconds() or 1.0
    rows: list[float] = []            # the position of the last number in each row (axes fraction)
    lines = []
    for n, e in enumerate(events, 1):
        x = e.ts.replace(tzinfo=None)
        hand = e.origin == "hand"
        ax.axvline(x, color=HAND if hand else DATA, linestyle="--" if hand else ":", linewidth=0.9)
        frac = (e.ts - x0).total_seconds() / span
        row = next((i for i, last in enumerate(rows) if frac - last >= 0.022), len(rows))
        rows[row:row + 1] = [frac]
        ax.annotate(str(n), (x, 1.0), xycoords=("data", "axes fraction"), xytext=(0, 3 + 10 * row),
                    textcoords="offset points", ha="center", va="bottom", fontsize=7.5, fontweight="bold",
                    color=HAND if hand else DATA)
        title = e.title if hand else e.title.split(":")[0] + " (data)"
        when = f"{e.ts:%H:%M}" if e.ts.date() == x0.date() else f"{day_label(e.ts)} {e.ts:%H:%M}"
        lines.append(f"{n:>2}  {when}  {title[:52]}")
    return lines


TIME_TITLE = "Affected responses over time"


def affected_time(m: IncidentModel) -> Figure:
    if not m.by_hour:
        return not_drawn("affected_time", TIME_TITLE, "no affected response")
    fig, marks = affected_time_figure(m)
    return Figure("affected_time", TIME_TITLE,
                  f"{num(m.counts.affected)} affected responses per hour (queries/report/affected_by_hour.sql) with "
                  f"{len(marks)} timeline events; below: the day of the response, its events numbered.", png(fig))


def affected_time_figure(m: IncidentModel):
    """(the matplotlib figure, the events marked on it): the whole period, and the day of the response with
    its events numbered above the plot and listed in a key below it."""
    zoom = _zoom_range(m)
    marks = [e for e in m.timeline if e.kind in ("model-private", "model-public", "all-prefill-fixed",
                                                  "first-affected", "last-affected") or e.origin == "hand"]
    shown = [e for e in marks if zoom and zoom[0] <= e.ts <= zoom[1]]
    key_rows = (len(shown) + 1) // 2
    # fixed layout in inches (top to bottom): title, whole period, its dates + the day's title and event
    # numbers, the response day, its times, the numbered key in two columns
    parts = [0.3, 1.9, 1.15, 2.0, 0.45, 0.18 * key_rows + 0.05] if zoom else [0.3, 1.9, 0.4]
    height = sum(parts)
    fig = plt().figure(figsize=(9.5, height))

    def rect(i: int) -> list[float]:
        top = sum(parts[:i])
        return [0.07, 1 - (top + parts[i]) / height, 0.91, parts[i] / height]

    xs = [h.replace(tzinfo=None) for h, _ in m.by_hour]
    whole = fig.add_axes(rect(1))
    whole.bar(xs, [n for _, n in m.by_hour], width=1 / 24, align="edge", color="#c0392b")
    for e in marks:
        whole.axvline(e.ts.replace(tzinfo=None), color=HAND if e.origin == "hand" else DATA,
                      linestyle="--" if e.origin == "hand" else ":", linewidth=0.8)
    whole.yaxis.get_major_locator().set_params(integer=True)
    whole.set_ylabel("affected per hour")
    whole.yaxis.set_major_formatter(plain_number)
    span = [x.replace(tzinfo=None) for x in (m.by_hour[0][0], m.by_hour[-1][0] + dt.timedelta(hours=1))]
    events = [e.ts.replace(tzinfo=None) for e in marks]
    period = date_axis(whole, min(span + events), max(span + events))
    whole.set_title(f"Affected responses per hour ({period}), whole period; dashed: hand-entered events, dotted: "
                    "derived from the data", fontsize=9, loc="left")
    if zoom:
        z = fig.add_axes(rect(3))
        z.bar(xs, [n for _, n in m.by_hour], width=1 / 24, align="edge", color="#c0392b")
        z.yaxis.get_major_locator().set_params(integer=True)
        z.set_ylabel("affected per hour")
        z.yaxis.set_major_formatter(plain_number)
        date_axis(z, zoom[0].replace(tzinfo=None), zoom[1].replace(tzinfo=None), pad=0)   # event marks: axes fractions
        legend = _event_marks(z, shown, *zoom)
        to = f"{zoom[1]:%H:%M}" if zoom[1].date() == zoom[0].date() else f"{zoom[1]:%Y-%m-%d %H:%M}"
        z.set_title(f"Response day, {zoom[0]:%Y-%m-%d %H:%M} to {to} UTC: numbered events below",
                    fontsize=9, loc="left", pad=34)
        key = fig.add_axes(rect(5))
        key.axis("off")
        for col in (0, 1):
            part = legend[col * key_rows:(col + 1) * key_rows]
            key.text(0.5 * col, 1.0, "\n".join(part), va="top", ha="left", fontsize=7.5, family="monospace",
                     transform=key.transAxes, linespacing=1.45)
    return fig, marks


NODES_TITLE = "Prefill nodes' exposure windows"


def node_windows(m: IncidentModel) -> Figure:
    if not report_part(m.facts.mechanism.name).shows_node_fixes:
        return not_drawn("node_windows", "Exposure windows per node", f"the {m.facts.mechanism.name} mechanism has "
                         "no configuration periods per node to draw; the post-mortem's node table gives each "
                         "instance's first and last affected response")
    fixes = {f.node: f for f in m.node_fixes if f.role == "prefill"}
    nodes = sorted({n.node for n in m.prefill_nodes if n.node} | set(fixes))
    if not nodes:
        return not_drawn("node_windows", NODES_TITLE, "no prefill node is named in this case's evidence: engine "
                         "logs name them, and so does `kvir audit` of the nodes' start-up logs")
    src = "queries/report/nodes.sql" + (" and queries/report/node_fixes.sql" if fixes else " (audit not run: "
                                                                                          "no config periods)")
    return Figure("node_windows", NODES_TITLE, f"{len(nodes)} prefill node(s); from {src}.",
                  png(node_windows_figure(m, nodes, fixes)))


def node_windows_figure(m: IncidentModel, nodes: list[str], fixes: dict):
    fig, ax = plt().subplots(figsize=(7.5, max(1.6, 0.45 * len(nodes) + 1.0)))
    xs = []
    for y, node in enumerate(nodes):
        f = fixes.get(node)
        if f and f.vulnerable_from:
            span = [f.vulnerable_from.replace(tzinfo=None), (f.fixed_at or m.facts.window_end).replace(tzinfo=None)]
            ax.plot(span, [y, y], color="#e6b0aa", linewidth=8, solid_capstyle="butt",
                    label="vulnerable config (audit)" if y == 0 else None)
            xs += span
        n = next((x for x in m.prefill_nodes if x.node == node), None)
        if n and n.first and n.last:
            span = [n.first.replace(tzinfo=None), n.last.replace(tzinfo=None)]
            ax.plot(span, [y, y], color="#c0392b", linewidth=3, marker="|", markersize=12,
                    label="first to last affected response" if y == 0 else None)
            ax.annotate(f"{n.affected:,}", (span[1], y), xytext=(4, 4), textcoords="offset points", fontsize=7)
            xs += span
    ax.set_yticks(range(len(nodes)), nodes)
    ax.set_ylim(-0.6, len(nodes) - 0.4)
    xs = xs or [m.facts.window_start.replace(tzinfo=None), m.facts.window_end.replace(tzinfo=None)]
    ax.set_title(f"Exposure window of each prefill node ({date_axis(ax, min(xs), max(xs))})")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.28), ncol=2, frameon=False, fontsize=7)
    return fig


def all_figures(m: IncidentModel) -> list[Figure]:
    return [prompt_lengths(m), affected_time(m), node_windows(m)]
