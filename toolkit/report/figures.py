"""The report's figures (matplotlib, Agg), drawn from the incident model only.

    prompt_lengths    prompt-length distribution of the model's requests in the window (affected apart),
                      with the KV pool, the engine's limit and the context length as vertical lines
    affected_time     affected responses per hour, with the timeline's events as vertical marks
    node_windows      each prefill node: its vulnerable-config period (audit) and its affected responses

Each figure is PNG bytes; the HTML documents embed them as data: URIs (no external resource).
matplotlib is imported here only, when a report is rendered.
"""
from __future__ import annotations

import base64
import io
from dataclasses import dataclass

from kvir.report.model import IncidentModel


@dataclass(frozen=True)
class Figure:
    name: str
    title: str
    caption: str
    png: bytes

    @property
    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")

    @property
    def file(self) -> str:
        return f"figures/{self.name}.png"


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 9, "svg.hashsalt": "kvir", "axes.spines.top": False,
                         "axes.spines.right": False})
    return plt


def _png(fig) -> bytes:
    buf = io.BytesIO()
    # no timestamp in the PNG metadata: the same model gives the same bytes
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    return buf.getvalue()


def _limit_lines(f) -> list[tuple[int, str, str]]:
    """The KV pool, the engine's limit and the context as (x, label, line style), left to right; lines
    within 5 % of each other (one line on a log axis) share one label."""
    lines = sorted([(f.pool_tokens, f"KV pool {f.pool_tokens:,}", "-"),
                    (f.context_tokens, f"context {f.context_tokens:,}", "--")]
                   + ([(f.engine_limit, f"{f.engine_label} limit {f.engine_limit:,}", ":")]
                      if f.engine_limit is not None else []))   # no line where the engine is unknown
    out: list[tuple[int, str, str]] = []
    for x, label, style in lines:
        if out and abs(x - out[-1][0]) / out[-1][0] < 0.05:
            out[-1] = (out[-1][0], f"{out[-1][1]} / {label}", "-" if "-" in (style, out[-1][2]) else out[-1][2])
        else:
            out.append((x, label, style))
    return out


def prompt_lengths(m: IncidentModel) -> Figure:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 3.4))
    if m.histogram:
        lo = [b.lo for b in m.histogram]
        width = [b.hi - b.lo for b in m.histogram]
        other = [b.n - b.n_affected for b in m.histogram]
        aff = [b.n_affected for b in m.histogram]
        ax.bar(lo, other, width=width, align="edge", color="#9aa9b8", label="not affected")
        ax.bar(lo, aff, width=width, bottom=other, align="edge", color="#c0392b", label="affected")
        ax.set_xscale("log")
        ax.set_yscale("symlog", linthresh=10)
    f = m.facts
    for i, (x, label, style) in enumerate(_limit_lines(f)):
        ax.axvline(x, color="#222", linestyle=style, linewidth=1)
        # above the plot, horizontal: the first leftwards, the others rightwards one above the other
        ax.annotate(label, (x, 1.0), xycoords=("data", "axes fraction"), xytext=(-3 if i == 0 else 3, 3 + 10 * max(i - 1, 0)),
                    textcoords="offset points", ha="right" if i == 0 else "left", va="bottom", fontsize=7.5)
    ax.set_xlabel("prompt tokens (log scale)")
    ax.set_ylabel("requests")
    ax.set_title(f"Prompt lengths, {f.model}, {f.window_start:%Y-%m-%d} to {f.window_end:%Y-%m-%d} UTC", pad=26)
    if m.histogram:
        ax.legend(loc="upper left", frameon=False)
    png = _png(fig)
    plt.close(fig)
    n = sum(b.n for b in m.histogram)
    return Figure("prompt_lengths", "Prompt-length distribution",
                  f"{n:,} requests to the model in the window (queries/report/prompt_histogram.sql); "
                  f"{m.counts.affected:,} affected. Lines: the KV pool, the engine's limit, the context length.", png)


def _zoom_range(m: IncidentModel):
    """The response day: from 3 h before awareness (or the last affected response) to 1 h after the last
    event within two days of it."""
    import datetime as dt

    start = m.disclosure.awareness_time or m.counts.last_affected
    if start is None:
        return None
    start = start - dt.timedelta(hours=3)
    later = [e.ts for e in m.timeline if start <= e.ts <= start + dt.timedelta(days=2)]
    return start, (max(later) if later else start + dt.timedelta(hours=6)) + dt.timedelta(hours=1)


def _dates(ax, fmt: str | None = None) -> None:
    """Date ticks that do not collide: few of them, each written once (ConciseDateFormatter) or as fmt."""
    import matplotlib.dates as mdates

    loc = mdates.AutoDateLocator(minticks=3, maxticks=8)
    ax.xaxis.set_major_locator(loc)
    ax.xaxis.set_major_formatter(mdates.DateFormatter(fmt) if fmt else mdates.ConciseDateFormatter(loc))


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
        lines.append(f"{n:>2}  {e.ts:%H:%M}  {title[:52]}")
    return lines


def affected_time(m: IncidentModel) -> Figure:
    plt = _plt()
    fig, marks = affected_time_figure(m)
    png = _png(fig)
    plt.close(fig)
    return Figure("affected_time", "Affected responses over time",
                  f"{m.counts.affected:,} affected responses per hour (queries/report/affected_by_hour.sql) with "
                  f"{len(marks)} timeline events; below: the day of the response, its events numbered.", png)


def affected_time_figure(m: IncidentModel):
    """(the matplotlib figure, the events marked on it): the whole period, and the day of the response with
    its events numbered above the plot and listed in a key below it."""
    plt = _plt()
    zoom = _zoom_range(m)
    marks = [e for e in m.timeline if e.kind in ("model-private", "model-public", "all-prefill-fixed",
                                                  "first-affected", "last-affected") or e.origin == "hand"]
    shown = [e for e in marks if zoom and zoom[0] <= e.ts <= zoom[1]]
    key_rows = (len(shown) + 1) // 2
    # fixed layout in inches (top to bottom): title, whole period, its dates + the day's title and event
    # numbers, the response day, its times, the numbered key in two columns
    parts = [0.3, 1.9, 1.15, 2.0, 0.45, 0.18 * key_rows + 0.05] if zoom else [0.3, 1.9, 0.4]
    height = sum(parts)
    fig = plt.figure(figsize=(9.5, height))

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
    whole.set_title("Affected responses per hour (UTC), whole period; dashed: hand-entered events, dotted: derived "
                    "from the data", fontsize=9, loc="left")
    _dates(whole)
    if zoom:
        z = fig.add_axes(rect(3))
        z.bar(xs, [n for _, n in m.by_hour], width=1 / 24, align="edge", color="#c0392b")
        z.set_xlim(zoom[0].replace(tzinfo=None), zoom[1].replace(tzinfo=None))
        z.yaxis.get_major_locator().set_params(integer=True)
        z.set_ylabel("affected per hour")
        _dates(z, "%H:%M")
        legend = _event_marks(z, shown, *zoom)
        z.set_title(f"Response day, {zoom[0]:%Y-%m-%d} {zoom[0]:%H:%M} to {zoom[1]:%H:%M} UTC: numbered events below",
                    fontsize=9, loc="left", pad=34)
        key = fig.add_axes(rect(5))
        key.axis("off")
        for col in (0, 1):
            part = legend[col * key_rows:(col + 1) * key_rows]
            key.text(0.5 * col, 1.0, "\n".join(part), va="top", ha="left", fontsize=7.5, family="monospace",
                     transform=key.transAxes, linespacing=1.45)
    return fig, marks


def node_windows(m: IncidentModel) -> Figure:
    plt = _plt()
    fixes = {f.node: f for f in m.node_fixes if f.role == "prefill"}
    nodes = sorted({n.node for n in m.prefill_nodes if n.node} | set(fixes))
    fig, ax = plt.subplots(figsize=(7.5, max(1.6, 0.45 * len(nodes) + 1.0)))
    for y, node in enumerate(nodes):
        f = fixes.get(node)
        if f and f.vulnerable_from:
            end = f.fixed_at or m.facts.window_end
            ax.plot([f.vulnerable_from.replace(tzinfo=None), end.replace(tzinfo=None)], [y, y], color="#e6b0aa",
                    linewidth=8, solid_capstyle="butt", label="vulnerable config (audit)" if y == 0 else None)
        n = next((x for x in m.prefill_nodes if x.node == node), None)
        if n and n.first and n.last:
            ax.plot([n.first.replace(tzinfo=None), n.last.replace(tzinfo=None)], [y, y], color="#c0392b",
                    linewidth=3, marker="|", markersize=12,
                    label="first to last affected response" if y == 0 else None)
            ax.annotate(f"{n.affected:,}", (n.last.replace(tzinfo=None), y), xytext=(4, 4),
                        textcoords="offset points", fontsize=7)
    ax.set_yticks(range(len(nodes)), nodes)
    ax.set_title("Exposure window of each prefill node (UTC)")
    if nodes:
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.28), ncol=2, frameon=False, fontsize=7)
        ax.set_ylim(-0.6, len(nodes) - 0.4)
    _dates(ax)
    png = _png(fig)
    plt.close(fig)
    src = "queries/report/nodes.sql" + (" and queries/report/node_fixes.sql" if fixes else " (audit not run: "
                                                                                          "no config periods)")
    return Figure("node_windows", "Prefill nodes' exposure windows",
                  f"{len(nodes)} prefill node(s); from {src}.", png)


def all_figures(m: IncidentModel) -> list[Figure]:
    return [prompt_lengths(m), affected_time(m), node_windows(m)]
