"""What every figure of kvir.report.figures shares: matplotlib set up headless, plain-number and plain-date
axes, the limit lines and the prompt-length bins split at them, and the note that replaces a figure with
nothing to show. matplotlib is imported only when a figure is drawn."""
from __future__ import annotations

import datetime as dt
import io
import math
from typing import Any, Iterable

MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as pyplot

    pyplot.rcParams.update({"font.size": 9, "svg.hashsalt": "kvir", "axes.spines.top": False,
                            "axes.spines.right": False})
    return pyplot


def png(fig) -> bytes:
    buf = io.BytesIO()
    # no timestamp in the PNG metadata: the same model gives the same bytes
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt().close(fig)
    return buf.getvalue()


def note_png(text: str) -> bytes:
    """A figure with nothing to show: the sentence saying why, no axes, nothing drawn."""
    fig = plt().figure(figsize=(7.5, 0.4))
    fig.text(0.0, 0.5, text, ha="left", va="center", fontsize=9, color="#555", wrap=True)
    return png(fig)


# ------------------------------------------------------------------------------------------ limit lines
def limit_values(tokens: Iterable[int | None]) -> list[int]:
    """The prompt lengths the figure marks (the mechanism's prompt limits: kvir.report.plugin.PromptLimits),
    sorted, without the unknown ones. The histogram's bins are split at each (queries/report/prompt_histogram.sql
    $lines)."""
    return sorted({x for x in tokens if x})


def bin_edges(bin_: int, seg: int, bins_per_decade: int, lines: list[int]) -> tuple[float, float]:
    """The edges of a log bin's part between two limit lines: the bin [10^(b/k), 10^((b+1)/k)) cut to
    [lines[seg-1], lines[seg]) (seg: how many lines lie at or below its prompt lengths)."""
    lo, hi = 10 ** (bin_ / bins_per_decade), 10 ** ((bin_ + 1) / bins_per_decade)
    if seg > 0:
        lo = max(lo, lines[seg - 1])
    if seg < len(lines):
        hi = min(hi, lines[seg])
    return lo, hi


# ----------------------------------------------------------------------------------------------- axes
def plain_number(x: float, _pos: Any = None) -> str:
    """A tick as a plain number: 1,000,000 (never 10⁶ or 3.15 × 10⁰); no label between whole numbers."""
    return f"{x:,.0f}" if abs(x - round(x)) < 1e-9 else ""


def log_axis(axis, lo: float, hi: float) -> None:
    """A log axis with a plain-number label at each power of ten between lo and hi, and no minor labels."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    ticks = [10 ** k for k in range(math.floor(math.log10(max(lo, 1))), math.ceil(math.log10(max(hi, 1))) + 1)]
    axis.set_major_locator(FixedLocator(ticks))
    axis.set_major_formatter(FuncFormatter(plain_number))
    axis.set_minor_formatter(NullFormatter())


def count_axis(ax, top: int) -> None:
    """Request counts on y: linear with whole-number ticks up to 20; above that symlog (0, 10, 100, ...)
    so that one bin of thousands leaves the small ones visible, every label a plain number."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullLocator

    if top <= 20:
        ax.yaxis.set_major_locator(MaxNLocator(integer=True, nbins=min(top, 5) or 1))
        ax.set_ylim(0, max(top, 1) * 1.05)
    else:
        ax.set_yscale("symlog", linthresh=10)
        ax.yaxis.set_major_locator(FixedLocator([0] + [10 ** k for k in range(1, len(str(top)) + 1)]))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.set_ylim(0, 10 ** len(str(top)))
    ax.yaxis.set_major_formatter(FuncFormatter(plain_number))


def day_label(d: dt.datetime) -> str:
    return f"{MONTHS[d.month - 1]} {d.day}"


def date_axis(ax, start: dt.datetime, end: dt.datetime, pad: float = 0.02) -> str:
    """Plain dates on x between start and end (naive UTC): 'Sep 1' at midnights for a span of days, '14:00'
    within a day; `pad`: the margin at each end, a fraction of the span. Returns what the labels leave out (the year, or the day), for the axis label."""
    import matplotlib.dates as mdates
    from matplotlib.ticker import FuncFormatter

    if end - start < dt.timedelta(hours=1):
        start, end = start - dt.timedelta(minutes=30), end + dt.timedelta(minutes=30)
    margin = (end - start) * pad             # a bar or a mark at either end stays off the axis' edge
    ax.set_xlim(start - margin, end + margin)
    days = (end - start).total_seconds() / 86400
    if days > 2:
        ax.xaxis.set_major_locator(mdates.DayLocator(interval=max(1, math.ceil(days / 7))))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: day_label(mdates.num2date(x))))
        return "UTC, " + "-".join(map(str, sorted({start.year, end.year})))
    hours = days * 24
    step = next(h for h in (1, 2, 3, 4, 6, 12, 24) if hours / h <= 8)
    ax.xaxis.set_major_locator(mdates.HourLocator(byhour=range(0, 24, step)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: hour_label(mdates.num2date(x))))
    first, last = day_label(start), day_label(end)
    return f"UTC, {start.year} {first}" + (f" to {last}" if first != last else "")


def hour_label(d: dt.datetime) -> str:
    """'14:00', or the date at midnight (a day boundary inside a zoomed axis says which day begins)."""
    return day_label(d) if (d.hour, d.minute) == (0, 0) else f"{d:%H:%M}"
