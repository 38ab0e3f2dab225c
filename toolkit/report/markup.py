"""Jinja environments over templates/ (a mechanism's templates/mechanisms/<folder>/ first) and the escaping
every document relies on.

HTML templates autoescape everything. Markdown templates escape every value (entities for < > &,
backslashes for Markdown syntax); the HTML form of a prose document is its Markdown converted by
markdown-it with raw HTML disabled. JSON templates put every value through `tojson`.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from importlib import resources
from typing import Any

from markupsafe import Markup

from kvir.core.text import visible
from kvir.report.times import iso

_MD_ESC = re.compile(r"([\\`*\[\]|{}])")


def md_escape(value: Any) -> str:
    """A value placed in Markdown: HTML-special characters as entities, Markdown syntax backslashed,
    line breaks flattened, control characters visible (a log-derived string can neither add markup, break
    a table nor drive the terminal that shows the file)."""
    if isinstance(value, Markup):
        return str(value)
    if value is None:
        return ""
    s = str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = _MD_ESC.sub(r"\\\1", s)
    # control characters (ESC of ANSI/OSC sequences, bidi overrides) shown as escapes, as on the terminal
    return visible(re.sub(r"[\r\n\t]+", " ", s))


def num(v: Any) -> str:
    """Every count and rate the documents show, in one format: 6,878 (a count), 22,535.6 (a rate: one
    decimal), n/a (not known). The templates' `num` filter; Python-written sentences and captions use it too."""
    if v is None:
        return "n/a"
    if isinstance(v, float) and not v.is_integer():
        return f"{v:,.1f}"
    return f"{int(v):,}"


def _utc(v: Any) -> str:
    if v is None or v == "":
        return "n/a"
    if isinstance(v, dt.datetime):
        return iso(v)
    return str(v)


def _day(v: Any) -> str:
    return v.strftime("%Y-%m-%d") if isinstance(v, dt.datetime | dt.date) else "n/a"


def _json_text(v: Any) -> str:
    return json.dumps(v, sort_keys=True, default=str)


FILTERS = {"num": num, "utc": _utc, "day": _day, "json": _json_text}


def loader(mechanism: str | None = None):
    """templates/, with a mechanism's own templates/mechanisms/<folder>/ searched first when `mechanism` (its
    folder) is given: its template of a shared template's name replaces that one for its cases."""
    from jinja2 import FileSystemLoader

    root = resources.files("kvir.templates")
    own = root.joinpath("mechanisms", mechanism) if mechanism else None
    return FileSystemLoader([str(own), str(root)] if own is not None and own.is_dir() else str(root))


def environments(template_loader=None, mechanism: str | None = None):
    """(html, markdown, json) Jinja environments over templates/ (and the mechanism's folder first: loader);
    `template_loader` replaces that loader (it must then find the mechanism's templates too)."""
    from jinja2 import Environment, StrictUndefined

    load = template_loader or loader(mechanism)
    html = Environment(loader=load, autoescape=True, undefined=StrictUndefined, trim_blocks=False)
    md = Environment(loader=load, autoescape=False, undefined=StrictUndefined, finalize=md_escape,
                     keep_trailing_newline=True)
    js = Environment(loader=load, autoescape=False, undefined=StrictUndefined)
    for env in (html, md, js):
        env.filters.update(FILTERS)
    return html, md, js


def md_to_html(text: str) -> Markup:
    """Markdown -> HTML with raw HTML disabled (escaped): nothing in the Markdown can become markup."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")
    return Markup(md.render(text))


def slug(account_id: str) -> str:
    """A file name for an account (ids are log-derived: anything goes in them)."""
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", account_id).strip("._-")[:40] or "account"
    return f"{base}-{hashlib.sha256(account_id.encode()).hexdigest()[:10]}"


def css() -> Markup:
    return Markup(resources.files("kvir.templates").joinpath("static", "report.css").read_text())
