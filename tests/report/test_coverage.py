"""Datasette-style coverage: what `kvir report --only` accepts (kvir.report.artifacts), the templates in
templates/ and the CLI help name the same things. Every template is used by some artifact (or the index),
every artifact's template exists and says what it is and which variables it takes, the help lists every
artifact, and rendering an artifact loads exactly the templates the list names for it."""
from __future__ import annotations

import re
import shutil
from importlib import resources

import pytest
from typer.testing import CliRunner

from kvir.cli.app import app
from kvir.report import ARTIFACTS, report
from kvir.report.artifacts import INDEX_TEMPLATES, KINDS, kind
from kvir.report.plugin import report_part

TEMPLATES = {p.name for p in resources.files("kvir.templates").iterdir() if p.name.endswith(".j2")}
LISTED = {t for k in KINDS for t in k.templates} | set(INDEX_TEMPLATES)


def test_every_template_belongs_to_an_artifact_and_every_artifact_template_exists():
    assert TEMPLATES - LISTED == set(), "templates no artifact renders"
    assert LISTED - TEMPLATES == set(), "artifacts naming templates that do not exist"
    assert ARTIFACTS == ("timeline", "postmortem", "public-report", "advisory", "csaf", "osv", "cve", "notices",
                         "gdpr", "figures")


@pytest.mark.parametrize("name", sorted(LISTED))
def test_each_template_says_what_it_is(name):
    text = resources.files("kvir.templates").joinpath(name).read_text()
    m = re.match(r"\{#-?\s*(\S+): (.+?)-?#\}", text, re.S)
    assert m and m.group(1) == name, f"{name} must start with {{# {name}: what it is ... Variables: ... #}}"
    assert "Variables:" in m.group(2) and len(m.group(2)) > 80


def test_cli_help_lists_every_artifact():
    res = CliRunner().invoke(app, ["report", "--help"], env={"COLUMNS": "300", "TERM": "dumb"})
    assert res.exit_code == 0
    text = re.sub(r"-\n[\s│]*", "-", res.output)            # a word wrapped at its hyphen
    text = re.sub(r"[│╭╮╰╯─\s]+", " ", text)
    listed = re.search(r"Render only these \(repeatable\): ([^.]+)\.", text)
    assert listed, text
    assert tuple(x.strip() for x in listed.group(1).split(",")) == ARTIFACTS


class _Recording:
    """A template loader that records every template a render loads (includes and extends too)."""

    def __init__(self):
        from kvir.report.markup import loader

        self.inner, self.loaded = loader(), set()

    def get_source(self, environment, name):
        self.loaded.add(name)
        return self.inner.get_source(environment, name)

    def load(self, environment, name, globals=None):
        from jinja2 import BaseLoader

        return BaseLoader.load(self, environment, name, globals)


@pytest.mark.parametrize("name", ARTIFACTS)
def test_rendering_an_artifact_loads_exactly_its_templates(tmp_path, small_case, name):
    dst = tmp_path / "case"
    shutil.copytree(small_case, dst, ignore=shutil.ignore_patterns("reports"))
    rec = _Recording()
    result = report(dst, only=[name], template_loader=rec)
    own = set(report_part(result.model.facts.mechanism.name).templates.get(name, ()))   # the small case's own
    assert rec.loaded == set(kind(name).templates) | own | set(INDEX_TEMPLATES)
