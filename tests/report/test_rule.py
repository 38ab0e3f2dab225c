"""The documents state the rule the triage actually used. With rule = "engine" (SGLang's own limit:
min(1,048,576 - 1, 681,280 - 1) - 5 = 681,274 tokens, worked out by hand) every document says prompts of
"681,274 tokens or more" were affected, and none says that prompts of "681,280 tokens or fewer" were
processed normally (under this rule r12, of exactly 681,280 tokens, is affected)."""
from __future__ import annotations

import pytest

from kvir.report import report
from kvir.triage.run import triage

from . import fleet


@pytest.fixture(scope="module")
def engine_rendered(tmp_path_factory):
    root = tmp_path_factory.mktemp("engine_rule")
    spec = fleet.write_fleet(root / "fleet")
    spec.write_text(spec.read_text().replace('rule = "public"', 'rule = "engine"'))
    triage(spec, [], out=root / "case").case.close()
    return report(root / "case", format="md")


def test_public_report_states_the_engine_condition(engine_rendered):
    md = engine_rendered.path("public_report.md").read_text()
    assert "681,274 tokens or more" in md
    assert "responses to prompts of fewer than 681,274 tokens: every other request was processed normally" in md
    assert engine_rendered.model.counts.affected == fleet.EXPECTED["affected"] + 1     # r12 counts now


def test_no_document_calls_the_pool_the_condition(engine_rendered):
    for p in engine_rendered.path("").rglob("*"):
        if p.suffix in (".md", ".json"):
            text = p.read_text()
            assert "681,280 tokens or fewer" not in text, p
            assert "more than 681,280 tokens" not in text, p
    for rel in ("postmortem.md", "gdpr_art33.md", "csaf/kvir-2026-0001.json"):
        assert "681,274 tokens or more" in engine_rendered.path(rel).read_text(), rel
