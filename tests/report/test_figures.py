"""The report's figures as a person reads them (issue 24): nothing drawn when there is nothing to show (the
caption says why), plain numbers and plain dates on the axes, no bar across a limit line, and no label
over another, at the demo's size and at a small case's."""
from __future__ import annotations

import dataclasses
import itertools
import re

import pytest

from kvir import open_case
from kvir.report.build import build_model
from kvir.report.figures import (affected_time_figure, all_figures, node_windows_figure, prompt_lengths_figure)

from .fleet import REQUESTS

POOL, CONTEXT = 681_280, 1_048_576            # the small case's and the demo's spec (tests/conftest.py, the demo)
PLAIN_NUMBER = re.compile(r"^(0|[1-9]\d{0,2}(,\d{3})*)$")
DATE = re.compile(r"^(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) ([1-9]|[12]\d|3[01])$")
TIME = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$")


def _model(path):
    case = open_case(path)
    try:
        return build_model(case)
    finally:
        case.close()


@pytest.fixture(scope="module")
def small_model(small_case):
    return _model(small_case)


@pytest.fixture(scope="module")
def demo_model(demo_run):
    return _model(demo_run.case)


def _labels(axis) -> list[str]:
    return [t.get_text() for t in axis.get_ticklabels() if t.get_text()]


def _drawn(fig):
    fig.canvas.draw()
    return fig


def _texts(fig) -> list[tuple[str, object]]:
    """Every piece of text drawn on the figure with its extent: tick labels, titles, axis labels, the limit
    labels, counts and legend entries."""
    renderer = fig.canvas.get_renderer()
    out = []
    for ax in fig.axes:
        items = [*ax.get_xticklabels(), *ax.get_yticklabels(), ax.title, ax._left_title, ax.xaxis.label,
                 ax.yaxis.label, *ax.texts]
        legend = ax.get_legend()
        if legend is not None:
            items += list(legend.get_texts())
        out += [(t.get_text(), t.get_window_extent(renderer)) for t in items if t.get_visible() and t.get_text().strip()]
    return out


def test_nothing_to_show_is_not_drawn_and_the_caption_says_why(bare_case):
    """A case whose evidence names no prefill node, with no prompt length and no affected response: no chart
    (the 1970-dated empty axes of issue 24), each caption saying why."""
    empty = dataclasses.replace(_model(bare_case), nodes=[], node_fixes=[], histogram=[], by_hour=[])
    figs = {f.name: f for f in all_figures(empty)}
    assert {n: f.drawn for n, f in figs.items()} == {"prompt_lengths": False, "affected_time": False,
                                                     "node_windows": False}
    assert figs["node_windows"].caption.startswith("Not drawn: no prefill node is named")
    assert figs["prompt_lengths"].caption.startswith("Not drawn: no request to @cf/zai-org/glm-5.3 in the window")
    assert figs["affected_time"].caption == "Not drawn: no affected response."
    for f in figs.values():
        assert f.png.startswith(b"\x89PNG") and f.data_uri.startswith("data:image/png;base64,")


def test_a_case_with_data_draws_every_figure(small_model):
    assert all(f.drawn and not f.caption.startswith("Not drawn") for f in all_figures(small_model))


@pytest.mark.parametrize("which", ["small", "demo"])
def test_axes_show_plain_numbers_and_plain_dates(which, small_model, request):
    m = small_model if which == "small" else request.getfixturevalue("demo_model")
    fig = _drawn(prompt_lengths_figure(m))
    ax = fig.axes[0]
    ys, xs = _labels(ax.yaxis), _labels(ax.xaxis)
    assert ys and all(PLAIN_NUMBER.match(t) for t in ys), ys           # not "3.15 × 10⁰", not "10²"
    assert xs and all(PLAIN_NUMBER.match(t) for t in xs), xs           # 1,000,000 rather than 10⁶
    assert "1,000,000" in xs
    windows = _drawn(node_windows_figure(m, *_nodes(m))).axes[0]
    whole, day = _drawn(affected_time_figure(m)[0]).axes[:2]
    for ax in (windows, whole, day):
        dates = _labels(ax.xaxis)
        assert dates and all(DATE.match(t) or TIME.match(t) for t in dates), dates   # never "31" then "Sep"
    assert all(DATE.match(t) for t in _labels(windows.xaxis)) and all(DATE.match(t) for t in _labels(whole.xaxis))
    for ax in (whole, day):
        assert all(PLAIN_NUMBER.match(t) for t in _labels(ax.yaxis)), _labels(ax.yaxis)


def _nodes(m) -> tuple[list[str], dict]:
    fixes = {f.node: f for f in m.node_fixes if f.role == "prefill"}
    return sorted({n.node for n in m.prefill_nodes if n.node} | set(fixes)), fixes


def test_no_bar_spans_a_limit_line_and_affected_bars_lie_between_pool_and_context(small_model):
    """The bins are split at the KV pool, the engine's limit and the context: the small case's affected
    prompts (700,000 to 1,000,000 tokens, tests/report/fleet.py) sit between the pool and the context, and
    the one of 1,000,000 tokens no longer shares a bar with lengths past the context."""
    engine_limit = min(CONTEXT - 1, POOL - 1) - 5
    lines = (POOL, engine_limit, CONTEXT)
    for b in small_model.histogram:
        assert not any(b.lo < x < b.hi for x in lines), (b, lines)
        if b.n_affected:
            assert b.lo >= POOL and b.hi <= CONTEXT, b
    affected_lengths = [r[3] for r in REQUESTS if r[3] > POOL and r[4] == 200 and r[7].endswith("glm-5.3")
                        and r[1] >= "2026-08-27"]
    assert sum(b.n_affected for b in small_model.histogram) == len(affected_lengths) == small_model.counts.affected


@pytest.mark.parametrize("which", ["small", "demo"])
def test_no_label_overlaps_another(which, small_model, request):
    m = small_model if which == "small" else request.getfixturevalue("demo_model")
    for fig in (_drawn(prompt_lengths_figure(m)), _drawn(node_windows_figure(m, *_nodes(m)))):
        boxes = _texts(fig)
        assert len(boxes) > 8
        for (a, ba), (b, bb) in itertools.combinations(boxes, 2):
            assert not ba.overlaps(bb), (a[:40], b[:40])
