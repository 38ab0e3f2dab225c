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
    lines = [(f.pool_tokens, f"KV pool {f.pool_tokens:,}", "-"), (f.context_tokens, f"context {f.context_tokens:,}", "--")]
    if abs(f.engine_limit - f.pool_tokens) / f.pool_tokens < 0.05:   # indistinguishable on a log axis: one label
        lines[0] = (f.pool_tokens, f"KV pool {f.pool_tokens:,} / engine limit {f.engine_limit:,}", "-")
    else:
        lines.append((f.engine_limit, f"engine limit {f.engine_limit:,}", ":"))
    for x, label, style in lines:
        ax.axvline(x, color="#222", linestyle=style, linewidth=1)
        ax.annotate(label, (x, 1.0), xycoords=("data", "axes fraction"), rotation=90, va="top",
                    ha="right" if x == f.pool_tokens else "left", fontsize=7,
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.8})
    ax.set_xlabel("prompt tokens (log scale)")
    ax.set_ylabel("requests")
    ax.set_title(f"Prompt lengths, {f.model}, {f.window_start:%Y-%m-%d} to {f.window_end:%Y-%m-%d} UTC")
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


def affected_time(m: IncidentModel) -> Figure:
    plt = _plt()
    zoom = _zoom_range(m)
    fig, axes = plt.subplots(1, 2 if zoom else 1, figsize=(9.5, 3.6), squeeze=False,
                             gridspec_kw={"width_ratios": [3, 2]} if zoom else None)
    marks = [e for e in m.timeline if e.kind in ("model-private", "model-public", "all-prefill-fixed",
                                                  "first-affected", "last-affected") or e.origin == "hand"]
    for i, ax in enumerate(axes[0]):
        if m.by_hour:
            xs = [h.replace(tzinfo=None) for h, _ in m.by_hour]
            ax.bar(xs, [n for _, n in m.by_hour], width=1 / 24, align="edge", color="#c0392b")
        for e in marks:
            if i == 1 and not (zoom[0] <= e.ts <= zoom[1]):
                continue
            ax.axvline(e.ts.replace(tzinfo=None), color="#1f4e79" if e.origin == "hand" else "#7f8c8d",
                       linestyle="--" if e.origin == "hand" else ":", linewidth=0.8)
            if i == 1 and e.origin == "hand":
                ax.annotate(e.title[:34], (e.ts.replace(tzinfo=None), 0.98), xycoords=("data", "axes fraction"),
                            rotation=90, va="top", ha="right", fontsize=6.5, color="#1f4e79")
        ax.yaxis.get_major_locator().set_params(integer=True)
        for lab in ax.get_xticklabels():
            lab.set_rotation(30)
            lab.set_ha("right")
    axes[0][0].set_ylabel("affected responses per hour")
    axes[0][0].set_title("whole period")
    if zoom:
        import matplotlib.dates as mdates

        z = axes[0][1]
        z.set_xlim(zoom[0].replace(tzinfo=None), zoom[1].replace(tzinfo=None))
        z.xaxis.set_major_locator(mdates.AutoDateLocator(minticks=3, maxticks=6))
        z.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M"))
        z.set_title(f"response day, {zoom[0]:%Y-%m-%d %H:%M} to {zoom[1]:%H:%M}")
    fig.suptitle("Affected responses over time (UTC); dashed: hand-entered events, dotted: derived events",
                 fontsize=9)
    fig.tight_layout()
    png = _png(fig)
    plt.close(fig)
    return Figure("affected_time", "Affected responses over time",
                  f"{m.counts.affected:,} affected responses per hour (queries/report/affected_by_hour.sql) with "
                  f"{len(marks)} timeline events; right: the day of the response.", png)


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
    fig.autofmt_xdate()
    png = _png(fig)
    plt.close(fig)
    src = "queries/report/nodes.sql" + (" and queries/report/node_fixes.sql" if fixes else " (audit not run: "
                                                                                          "no config periods)")
    return Figure("node_windows", "Prefill nodes' exposure windows",
                  f"{len(nodes)} prefill node(s); from {src}.", png)


def all_figures(m: IncidentModel) -> list[Figure]:
    return [prompt_lengths(m), affected_time(m), node_windows(m)]
