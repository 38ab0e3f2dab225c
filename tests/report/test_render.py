"""Rendered documents: every artifact, the facts in them, per-customer separation, escaping, CSV safety,
formats, --only, the manifest."""
from __future__ import annotations

import csv
import hashlib
import html as htmlmod
import io
import json
import re

import pytest
from .fleet import EXPECTED, FORMULA, REQUESTS, XSS

from kvir.core.errors import KvirError
from kvir.report import ARTIFACTS, report
from kvir.report.markup import md_escape, slug

ACCOUNTS = sorted({r[2] for r in REQUESTS})
REQUEST_OWNER = {r[0]: r[2] for r in REQUESTS}


def _forms(s: str) -> set[str]:
    """How an account id can appear in a rendered file: raw, HTML-escaped, Markdown-escaped."""
    return {s, htmlmod.escape(s, quote=False), htmlmod.escape(s), md_escape(s)}


def test_every_artifact_is_written(rendered):
    paths = {a.path for a in rendered.artifacts}
    for stem in ("timeline", "postmortem", "public_report", "advisory", "gdpr_art33"):
        assert {f"{stem}.md", f"{stem}.html"} <= paths
    assert {"timeline.csv", "timeline.jsonl", "figures/prompt_lengths.png", "figures/affected_time.png",
            "figures/node_windows.png", "csaf/kvir-2026-0001-sglang.json", "csaf/kvir-2026-0001.json",
            "osv/x_KVIR-2026-0001.json", "cve/cna_container.json"} <= paths
    affected = {p for p in paths if p.startswith("notices/affected/") and p.endswith(".md")}
    source = {p for p in paths if p.startswith("notices/source/") and p.endswith(".md")}
    assert affected == {f"notices/affected/{slug(a)}.md" for a in EXPECTED["affected_by_account"]}
    assert source == {f"notices/source/{slug(a)}.md" for a in EXPECTED["replay_sources"]}
    for p in paths:
        assert rendered.path(p).stat().st_size > 0
    assert rendered.index.exists() and rendered.manifest.exists()
    assert rendered.ok


def test_manifest_hashes_every_artifact_and_the_inputs(rendered, small_case):
    man = json.loads(rendered.manifest.read_text())
    listed = {a["path"]: a["sha256"] for a in man["artifacts"]}
    assert set(listed) == {a.path for a in rendered.artifacts} | {"index.html"}
    for path, sha in listed.items():
        assert hashlib.sha256(rendered.path(path).read_bytes()).hexdigest() == sha, path
    assert len(man["inputs"]["case.duckdb"]["sha256"]) == 64
    assert man["inputs"]["incident_spec"]["sha256"]
    assert len(man["inputs"]["log_inputs"]) == 5
    assert man["numbers"]["affected"] == {"value": EXPECTED["affected"], "query": "queries/triage/summary.sql"}
    assert any(q["query"] == "queries/report/headline.sql" and q["sha256"] for q in man["queries"])


def test_manifest_hash_is_that_of_the_case_file_after_rendering(tmp_path, small_case):
    import shutil

    dst = tmp_path / "case"
    shutil.copytree(small_case, dst, ignore=shutil.ignore_patterns("reports"))
    r = report(dst, only=["timeline"])
    man = json.loads(r.manifest.read_text())
    for name in ("case.duckdb", "manifest.json"):
        assert man["inputs"][name]["sha256"] == hashlib.sha256((dst / name).read_bytes()).hexdigest(), name


def test_index_links_resolve(rendered):
    page = rendered.index.read_text()
    hrefs = re.findall(r'href="([^"]+)"', page)
    assert len(hrefs) > 30
    for h in hrefs:
        assert not re.match(r"^[a-z]+:", h), h
        assert rendered.path(htmlmod.unescape(h)).exists(), h


def test_public_report_states_the_facts(rendered):
    md = rendered.path("public_report.md").read_text()
    assert "**10 responses**" in md
    assert "**4\ncustomer account(s)**" in md or "**4 customer account(s)**" in md.replace("\n", " ")
    assert "2026-08-27T06:15:00Z" in md and "2026-09-09T13:55:00Z" in md
    assert "| investigated window (UTC) | 2026-08-27T00:00:00Z → 2026-09-09T19:40:00Z |" in md
    assert "## What data was exposed" in md and "## What data was not exposed" in md
    assert "We thank A. Researcher" in md and "## Remediation" in md
    # the public document names no account
    for acct in ACCOUNTS:
        assert not (_forms(acct) & {w for w in _forms(acct) if w in md}), acct


def test_notices_are_separated_per_customer(rendered):
    for a in rendered.model.notifiable_accounts:
        own = set(EXPECTED["affected_by_account"][a.account_id])
        for ext in ("md", "html", "csv"):
            text = rendered.path(f"notices/affected/{slug(a.account_id)}.{ext}").read_text()
            for rid in own:
                assert rid in text
            for other in ACCOUNTS:
                if other != a.account_id:
                    assert not any(f in text for f in _forms(other)), (a.account_id, other, ext)
            for rid, owner in REQUEST_OWNER.items():
                if owner != a.account_id:
                    assert not re.search(rf"\b{rid}\b", text), (a.account_id, rid, ext)
    for s in rendered.model.replay.sources:
        own = set(EXPECTED["replay_sources"][s.account_id])
        for ext in ("md", "html", "csv"):
            text = rendered.path(f"notices/source/{slug(s.account_id)}.{ext}").read_text()
            assert own <= set(re.findall(r"\br\d\d\b", text))
            for rid, owner in REQUEST_OWNER.items():
                if owner != s.account_id:
                    assert not re.search(rf"\b{rid}\b", text), (s.account_id, rid, ext)
            for other in ACCOUNTS:
                if other != s.account_id:
                    assert not any(f in text for f in _forms(other)), (s.account_id, other, ext)


def test_notice_content(rendered):
    md = rendered.path(f"notices/affected/{slug('acct_alpha')}.md").read_text()
    for heading in ("## What happened", "## Your affected requests", "## What this means for your data",
                    "## What to do", "## Contact"):
        assert heading in md
    assert "| r01 | 2026-08-27T06:15:00Z | 700,000 | 200 |" in md
    assert "| r04 | 2026-09-03T17:45:00Z | 1,000,000 | 200 |" in md
    assert "security@inference.example.com" in md
    src = rendered.path(f"notices/source/{slug('acct_gamma')}.md").read_text()
    assert "| r11 | 2026-09-01T10:00:00Z | 1 | 64 |" in src


def test_gdpr_draft(rendered):
    md = rendered.path("gdpr_art33.md").read_text()
    assert "| deadline (awareness + 72 hours) | 2026-09-12T13:22:00Z |" in md
    assert "| awareness | 2026-09-09T13:22:00Z |" in md
    assert "**no: late**" in md
    assert "Scope of the affected accounts was confirmed by replay only on 2026-09-13." in md
    for part in ("(Art. 33(3)(a))", "(Art. 33(3)(b))", "(Art. 33(3)(c))", "(Art. 33(3)(d))"):
        assert part in md
    assert "**10 responses**" in md


def test_postmortem_sections(rendered):
    md = rendered.path("postmortem.md").read_text()
    for h in ("## Summary", "## Impact", "## Root causes", "## Trigger", "## Resolution", "## Detection",
              "## Action items", "## Lessons learned", "### What went well", "### What went wrong",
              "### Where we got lucky", "## Timeline", "## Supporting information"):
        assert h in md, h
    assert "queries/report/headline.sql" in md


def test_log_derived_html_is_escaped(rendered):
    raw = "<script>alert(1)</script>"
    for p in rendered.path("").rglob("*"):
        if p.suffix in (".html", ".md"):
            text = p.read_text()
            assert raw not in text, p
            assert "<script" not in text.lower(), p
    notice = rendered.path(f"notices/affected/{slug(XSS)}.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in notice
    assert "&lt;script&gt;" in rendered.path("postmortem.html").read_text()
    assert "&lt;script&gt;" in rendered.index.read_text()


def test_notice_csv_neutralises_formulas(rendered):
    rows = list(csv.DictReader(io.StringIO(rendered.path(f"notices/affected/{slug(FORMULA)}.csv").read_text())))
    assert rows == [{"account_id": "'" + FORMULA, "request_id": "r06", "ts": "2026-09-06T12:00:00Z",
                     "prompt_tokens": "800000", "http_status": "200"}]


def test_html_is_self_contained(rendered):
    for p in rendered.path("").rglob("*.html"):
        text = p.read_text()
        assert not re.search(r'<(script|link|iframe|object|embed)\b', text, re.I), p
        for src in re.findall(r'\bsrc="([^"]*)"', text):
            assert src.startswith("data:image/png;base64,"), (p, src[:40])
        assert "@import" not in text and "url(" not in text


@pytest.mark.parametrize("fmt, present, absent", [("md", ".md", ".html"), ("html", ".html", ".md")])
def test_format_option(tmp_path, small_case, fmt, present, absent):
    import shutil

    dst = tmp_path / "case"
    shutil.copytree(small_case, dst, ignore=shutil.ignore_patterns("reports"))
    r = report(dst, only=["postmortem", "notices"], format=fmt)
    prose = [a.path for a in r.artifacts if not a.path.endswith(".csv")]
    assert prose and all(p.endswith(present) for p in prose)
    assert not list((dst / "reports").rglob("*" + absent)) or absent == ".html" and \
        [p.name for p in (dst / "reports").rglob("*.html")] == ["index.html"]


def test_only_renders_what_was_asked(tmp_path, small_case):
    import shutil

    dst = tmp_path / "case"
    shutil.copytree(small_case, dst, ignore=shutil.ignore_patterns("reports"))
    r = report(dst, only=["timeline"])
    assert {a.path for a in r.artifacts} == {"timeline.md", "timeline.html", "timeline.csv", "timeline.jsonl"}
    assert not (dst / "reports" / "postmortem.md").exists()
    r2 = report(dst, only=["osv"])        # earlier artifacts stay listed while unchanged
    assert {a.path for a in r2.artifacts} >= {"timeline.md", "osv/x_KVIR-2026-0001.json"}
    with pytest.raises(KvirError, match="unknown report"):
        report(dst, only=["nonsense"])
    with pytest.raises(KvirError, match="unknown format"):
        report(dst, format="pdf")
    assert set(ARTIFACTS) >= {"timeline", "csaf", "osv", "cve", "notices", "gdpr"}


def test_a_failing_document_is_reported_not_written_as_valid(tmp_path, small_case, monkeypatch):
    import shutil

    from kvir.report import validate

    dst = tmp_path / "case"
    shutil.copytree(small_case, dst, ignore=shutil.ignore_patterns("reports"))
    monkeypatch.setitem(validate.VALIDATORS, "osv", lambda doc: validate.Check("test validator", False, ["id: broken"]))
    r = report(dst, only=["osv"])
    assert not r.ok
    assert not (dst / "reports/osv/x_KVIR-2026-0001.json").exists()
    assert (dst / "reports/osv/x_KVIR-2026-0001.invalid.json").exists()
    assert (dst / "reports/osv/x_KVIR-2026-0001.errors.txt").read_text() == "id: broken\n"
    assert any("FAILED validation" in w for w in r.warnings)
    assert "INVALID" in r.index.read_text()


def test_a_case_without_affected_responses_renders(tmp_path):
    from . import fleet

    from kvir.triage.run import triage

    spec = fleet.write_fleet(tmp_path / "fleet")
    spec.write_text(spec.read_text().replace("pool_tokens = 681280", "pool_tokens = 2000000")
                    .replace("context_tokens = 1048576", "context_tokens = 4000000"))
    triage(spec, [], out=tmp_path / "case").case.close()
    r = report(tmp_path / "case", only=["public-report", "notices", "csaf", "osv", "cve", "gdpr"])
    assert r.ok and r.model.counts.affected == 0
    assert "**0 responses** were affected" in (tmp_path / "case/reports/public_report.md").read_text()
    assert not any(a.path.startswith("notices/") for a in r.artifacts)
