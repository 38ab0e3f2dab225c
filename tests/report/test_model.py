"""The incident model: counts, accounts, stages and disclosure facts, checked against hand-worked values."""
from __future__ import annotations

import datetime as dt

import pytest
from .fleet import EXPECTED, FORMULA, XSS

import kvir
from kvir.core.errors import KvirError
from kvir.report import build_model, ensure_spec_facts
from kvir.report.disclosure import parse_disclosure
from kvir.report.times import iso


def test_counts_and_window(rendered):
    c = rendered.model.counts
    assert c.affected == EXPECTED["affected"]
    assert c.customer_accounts == EXPECTED["customers"]
    assert c.affected_labelled == EXPECTED["labelled_affected"]
    assert c.rejected == EXPECTED["rejected"]
    assert iso(c.first_affected) == EXPECTED["first_affected"]
    assert iso(c.last_affected) == EXPECTED["last_affected"]
    # r12 has exactly pool_tokens: only the engine rule flags it
    assert c.other_rule_adds == 1


def test_accounts_hold_only_their_own_requests(rendered):
    got = {a.account_id: [r.request_id for r in a.responses] for a in rendered.model.accounts}
    assert got == EXPECTED["affected_by_account"]
    labels = {a.account_id: a.label for a in rendered.model.accounts}
    assert labels["acct_researcher"] == "reporting researcher" and labels[XSS] is None and labels[FORMULA] is None
    assert {a.account_id for a in rendered.model.customer_accounts} == {"acct_alpha", "acct_beta", XSS, FORMULA}


def test_stages_and_replay_sources(rendered):
    m = rendered.model
    assert [s.ran for s in m.stages] == [True, True, True]
    assert {s.account_id: [r.request_id for r in s.requests] for s in m.replay.sources} == EXPECTED["replay_sources"]
    assert m.replay.verdicts == {"exposed": 2, "not-reproduced": 1}
    alpha = next(a for a in m.accounts if a.account_id == "acct_alpha")
    assert [(v.request_id, v.verdict, v.foreign_requests) for v in alpha.replay] == [("r01", "exposed", 1),
                                                                                  ("r04", "not-reproduced", 0)]


def test_missing_stages_are_not_run_never_invented(bare_rendered):
    m = bare_rendered.model
    audit, replay = m.stage("audit"), m.stage("replay")
    assert not audit.ran and "not run" in audit.note
    assert not replay.ran and "not run" in replay.note
    assert m.replay is None and m.node_fixes == [] and m.findings == [] and m.indicators == []
    assert not any(a.path.startswith("notices/source/") for a in bare_rendered.artifacts)
    pm = bare_rendered.path("postmortem.md").read_text()
    assert "Replay: not run" in pm and "audit not run" in pm
    assert "replay not run" in bare_rendered.path("public_report.md").read_text()


def test_spec_facts_are_copied_into_the_case(small_case):
    case = kvir.open_case(small_case)
    try:
        n = case.con.execute("SELECT count(*) FROM hand_events").fetchone()[0]
        assert n == 8
        aw = case.con.execute("SELECT value FROM disclosure WHERE key = 'awareness_time'").fetchone()[0]
        assert aw == '"2026-09-09T13:22:00Z"'
    finally:
        case.close()


def test_report_without_readable_spec_warns(tmp_path, small_case):
    import shutil

    dst = tmp_path / "case"
    shutil.copytree(small_case, dst)
    case = kvir.open_case(dst)
    try:
        case.con.execute("DROP TABLE hand_events")
        case.con.execute("DROP TABLE disclosure")
        case.manifest["incident_spec"] = {"path": str(tmp_path / "gone.toml"), "sha256": "0" * 64}
        warnings = ensure_spec_facts(case)
        assert warnings and "cannot be read" in warnings[0]
        m = build_model(case, warnings=warnings)
        assert not any(e.origin == "hand" for e in m.timeline)
        assert m.warnings == warnings
    finally:
        case.close()


def test_bad_disclosure_value_names_the_key():
    with pytest.raises(KvirError, match=r"disclosure\.tlp"):
        parse_disclosure({"tlp": "PURPLE"}, "X")
    with pytest.raises(KvirError, match=r"disclosure\.notified_at"):
        parse_disclosure({"notified_at": "yesterday"}, "X")
    d = parse_disclosure({"provier": "typo"}, "X")
    assert d.unknown_keys == ("provier",) and "provider" in d.missing


def test_gdpr_clock(rendered):
    m = rendered.model
    assert iso(m.gdpr_deadline) == EXPECTED["deadline"]
    assert m.gdpr_late is True       # notified 2026-09-13T10:00Z, after the deadline
    assert m.disclosure.notified_at == dt.datetime(2026, 9, 13, 10, tzinfo=dt.timezone.utc)


def test_incident_option_refreshes_hand_events(tmp_path, small_case):
    import shutil

    from kvir.report import report

    dst = tmp_path / "case"
    shutil.copytree(small_case, dst, ignore=shutil.ignore_patterns("reports"))
    spec = tmp_path / "incident.toml"
    original = (small_case.parent / "fleet" / "incident.toml").read_text()
    spec.write_text(original.replace("[disclosure]", '[[events]]\nts = 2026-09-11T08:00:00Z\ntitle = "Supervisory '
                                                     'authority notified"\nactor = "DPO"\ncategory = "regulatory"'
                                                     '\n\n[disclosure]'))
    r = report(dst, only=["timeline"], spec=spec)
    titles = [e.title for e in r.model.timeline if e.origin == "hand"]
    assert "Supervisory authority notified" in titles and len(titles) == 9
