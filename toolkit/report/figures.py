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

from .model import IncidentModel


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
    for x, label, style in ((f.pool_tokens, f"KV pool {f.pool_tokens:,}", "-"),
                            (f.engine_limit, f"engine limit {f.engine_limit:,}", ":"),
                            (f.context_tokens, f"context {f.context_tokens:,}", "--")):
        ax.axvline(x, color="#222", linestyle=style, linewidth=1)
        ax.annotate(label, (x, 1), xycoords=("data", "axes fraction"), rotation=90, va="top", ha="right",
                    fontsize=7)
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


def affected_time(m: IncidentModel) -> Figure:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 3.4))
    if m.by_hour:
        xs = [h.replace(tzinfo=None) for h, _ in m.by_hour]
        ax.bar(xs, [n for _, n in m.by_hour], width=1 / 24, align="edge", color="#c0392b", label="affected per hour")
    marks = [e for e in m.timeline if e.kind in ("model-private", "model-public", "all-prefill-fixed",
                                                  "first-affected", "last-affected") or e.origin == "hand"]
    for e in marks:
        ax.axvline(e.ts.replace(tzinfo=None), color="#1f4e79" if e.origin == "hand" else "#7f8c8d",
                   linestyle="--" if e.origin == "hand" else ":", linewidth=0.8)
    ax.set_ylabel("affected responses per hour")
    ax.set_title("Affected responses over time (UTC); dashed: hand-entered events, dotted: derived events")
    fig.autofmt_xdate()
    png = _png(fig)
    plt.close(fig)
    return Figure("affected_time", "Affected responses over time",
                  f"{m.counts.affected:,} affected responses per hour (queries/report/affected_by_hour.sql) with "
                  f"{len(marks)} timeline events.", png)


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
        ax.legend(loc="lower left", frameon=False, fontsize=7)
    fig.autofmt_xdate()
    png = _png(fig)
    plt.close(fig)
    src = "queries/report/nodes.sql" + (" and queries/report/node_fixes.sql" if fixes else " (audit not run: "
                                                                                          "no config periods)")
    return Figure("node_windows", "Prefill nodes' exposure windows",
                  f"{len(nodes)} prefill node(s); from {src}.", png)


def all_figures(m: IncidentModel) -> list[Figure]:
    return [prompt_lengths(m), affected_time(m), node_windows(m)]
