"""Each format read from fixtures its own software wrote (tests/fixtures/<format>/, issue #11), with counts
worked out by hand (expected_generated.py). Every fixture folder's meta.json names real versions, and the
format registry (what `kvir formats NAME` prints) agrees with it."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import kvir
from kvir.ingest.formats import FORMATS
from kvir.ingest.sources import sniff

from ..conftest import spec_text
from . import expected_generated as X
from .conftest import affected_ids, categories
from .fixture_index import GENERATED, meta_of

CHI = "America/Chicago"
VERSION = re.compile(r"\d+(\.\d+)+")


def _triage(tmp_path, paths, rule="public", extra="", **kw):
    tmp_path.mkdir(parents=True, exist_ok=True)
    spec = tmp_path / f"incident-{rule}.toml"
    spec.write_text(spec_text(rule, extra, engine="sglang"))   # the reference fleet's engine: gateways name none
    kw.setdefault("hash", "none")
    return kvir.triage(spec, [Path(p) for p in paths], out=tmp_path / f"case-{rule}", **kw)


def _counts(result) -> dict[str, tuple[int, int, int, int]]:
    out = {}
    for s in result.sources:
        assert s["read"] == s["parsed"] + s["quarantined"], s
        label = Path(str(s["label"]).split(" (")[0])
        key = label.parent.name if "sglang-metrics" in str(label) else label.name
        out[key] = (s["read"], s["requests"], s["skipped"], s["quarantined"])
    return out


def _by_category(result) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for rid, cat in categories(result).items():
        out.setdefault(cat, set()).add(rid)
    return out


# ------------------------------------------------------------------------------------------ provenance

def test_meta_files_name_real_software():
    folders = [p for p in GENERATED.iterdir() if p.is_dir() and (p / "meta.json").exists()]
    assert {p.name for p in folders} <= set(FORMATS)
    for folder in folders:
        meta = json.loads((folder / "meta.json").read_text())
        assert meta["format"] == folder.name
        on_disk = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and p.name != "meta.json"}
        assert on_disk == set(meta["files"]), f"{folder.name}: files and meta.json disagree"
        for rel, e in meta["files"].items():
            assert e["made_by"] in ("software", "sdk-model", "hand"), (folder.name, rel)
            assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", e["generated_at"]), (folder.name, rel)
            assert (GENERATED.parent.parent / e["generator"]).exists(), e["generator"]
            if e["made_by"] != "hand":
                assert e["software"] and all(VERSION.search(str(v)) for v in e["software"].values()), (folder.name, rel)
            else:
                assert e.get("note", "").startswith("hand-written"), (folder.name, rel)


def test_formats_card_prints_fields_example_and_software(capsys):
    from kvir.cli.present.formats import print_format

    print_format("sglang-json")
    out = capsys.readouterr().out
    assert "required  timestamp, event, rid|obj.rid|out.meta_info.id" in out
    # a value longer than the line wraps under itself (issue 24: the card fits 80 columns)
    assert "out.meta_info.e2e_latency" in out.split("  optional", 1)[1].split("\n  fixtures", 1)[0]
    assert all(len(line) <= 80 for line in out.split("\n  example")[0].splitlines())
    assert "sglang 0.5.11, 0.5.12, 0.5.18, 0.5.19, 0.5.22, 0.5.23" in out
    assert '"event": "request.finished"' in out


# ------------------------------------------------------------------------------------------ SGLang

@pytest.mark.parametrize("build", X.SGLANG_BUILDS)
@pytest.mark.parametrize("fmt", ["sglang-json", "sglang-text"])
def test_sglang_logs_of_every_build(fmt, build, tmp_path):
    files = sorted((GENERATED / fmt / build).glob("*.log"))
    leaking = build in X.LEAKING
    want = X.SGLANG_TRIAGE["leaking" if leaking else "fixed"]
    r = _triage(tmp_path, files, source_tz=CHI)            # format sniffed
    assert {s["format"] for s in r.sources} == {fmt}
    if (fmt, build) == ("sglang-text", "0.5.11"):         # no time in its request log's lines
        assert _counts(r) == X.SGLANG_TEXT_0511_COUNTS
        cats = _by_category(r)
        assert affected_ids(r) == X.SGLANG_TEXT_0511_TRIAGE["affected"]
        assert cats.get("rejected") == X.SGLANG_TEXT_0511_TRIAGE["rejected"]
        assert cats.get("undecidable") == X.SGLANG_TEXT_0511_TRIAGE["undecidable"]
        assert all("no time to place it" in q for q in r.quarantine["reason"])
        return
    assert _counts(r) == (X.SGLANG_COUNTS if leaking else X.SGLANG_COUNTS_FIXED)
    by = {Path(str(s["label"])).name: s for s in r.sources}
    # the served model from the build's own settings dump (ServerArgs(...) <= 0.5.18, {...} from 0.5.19)
    assert by["air-0.log"]["served_model"] == "zai-org/GLM-5.3-Air"
    assert by["prefill-0.log"]["served_model"] == "zai-org/GLM-5.3" and by["prefill-0.log"]["role"] == "prefill"
    assert all(s["served_model_source"].startswith("server_args= line 1") for s in r.sources)
    cats = _by_category(r)
    assert affected_ids(r) == want["public"]["affected"]
    assert cats.get("rejected", set()) == want["public"]["rejected"]
    assert r.summary["in_scope"] == X.SGLANG_IN_SCOPE
    c = r.case.con
    # rejected for length: the real prompt, and the stub's 1 token on the prefill side
    assert c.execute("SELECT prompt_tokens, prefill_tokens, outcome FROM requests WHERE request_id = 'mF'").fetchone() \
        == (700000, 1, "rejected")
    if leaking:
        assert c.execute("SELECT prompt_tokens, prefill_tokens FROM requests WHERE request_id = 'dA'").fetchone() \
            == (681281, 1)
        assert c.execute("SELECT outcome, prompt_tokens, http_status FROM requests WHERE request_id = 'dE'").fetchone() \
            == ("aborted", 2000, None)
    else:
        assert c.execute("SELECT prompt_tokens, outcome FROM requests WHERE request_id = 'pA'").fetchone() \
            == (681281, "rejected")
    engine = _triage(tmp_path, files, rule="engine", source_tz=CHI)
    assert affected_ids(engine) == want["engine"]["affected"]
    assert _by_category(engine).get("rejected", set()) == want["engine"]["rejected"]


@pytest.mark.parametrize("build", ["0.5.11", "0.5.19", "0.5.23"])
def test_sglang_server_output_sniffed_as_its_request_log_format(build):
    for fmt in ("sglang-json", "sglang-text"):
        for p in sorted((GENERATED / fmt / build).glob("*.log")):
            assert sniff(p)[0].name == fmt, (fmt, p.name)


@pytest.mark.parametrize("build", X.SGLANG_BUILDS)
def test_sglang_metrics_export_of_every_build(build, tmp_path):
    files = sorted((GENERATED / "sglang-metrics" / build).rglob("*.log"))
    leaking = build in X.LEAKING
    # an export holds no settings dump: each node's served model and role are given, as an operator would
    extra = "".join(f'\n[[sources]]\npath = "{GENERATED / "sglang-metrics" / build / node}"\nserved_model = "{model}"\n'
                    f'role = "{role}"\n' for node, model, role in (
                        ("prefill-0", "zai-org/GLM-5.3", "prefill"), ("decode-0", "zai-org/GLM-5.3", "decode"),
                        ("mixed-0", "zai-org/GLM-5.3", "mixed"), ("air-0", "zai-org/GLM-5.3-Air", "mixed")))
    r = _triage(tmp_path, files, extra=extra, source_tz=CHI)
    assert _counts(r) == (X.SGLANG_METRICS_COUNTS if leaking else X.SGLANG_METRICS_COUNTS_FIXED)
    want = X.SGLANG_TRIAGE["leaking" if leaking else "fixed"]["public"]
    assert affected_ids(r) == want["affected"]
    assert _by_category(r).get("rejected", set()) == want["rejected"]


# ------------------------------------------------------------------------------------------ gateways

@pytest.mark.parametrize("name", X.LITELLM_FILES)
def test_litellm_spend_logs_from_the_proxy(name, tmp_path):
    r = _triage(tmp_path, [GENERATED / "litellm" / name])
    assert r.sources[0]["format"] == "litellm"
    assert _counts(r) == {name: (7, 7, 0, 0)}
    assert r.summary["in_scope"] == X.LITELLM_IN_SCOPE            # the model group or the deployment names it
    assert dict(zip(r.affected["request_id"], r.affected["account_id"])) == X.LITELLM_AFFECTED
    cats = _by_category(r)
    assert "undecidable" not in cats                               # failure rows: length unknown, not 18, not served
    fails = {k: v[0] for k, v in X.LITELLM_FAILURES.items()}
    assert {i: c for c, members in cats.items() for i in members if i in fails} == fails
    stored = r.case.con.execute("SELECT request_id, outcome, http_status, prompt_tokens FROM requests "
                                "WHERE list_contains($ids, request_id)", {"ids": list(fails)}).fetchall()
    assert {i: (o, st, n) for i, o, st, n in stored} == {k: (*v, None) for k, v in X.LITELLM_FAILURES.items()}
    assert (r.summary["rejected"], r.summary["failed"], r.summary["undecidable"]) == (2, 1, 0)
    assert cats["other-rule"] == X.LITELLM_OTHER_RULE


@pytest.mark.parametrize("name", sorted(X.OTEL))
def test_otel_spans_from_the_sdk(name, tmp_path):
    want = X.OTEL[name]
    r = _triage(tmp_path, [GENERATED / "otel-genai" / name])
    assert _counts(r) == {name: want["counts"]}
    assert dict(zip(r.affected["request_id"], r.affected["account_id"])) == want["affected"]
    assert categories(r)[want["content_filter"]] == "undecidable"      # a filtered response is not "served"


def test_vllm_log_and_bodies_of_one_real_run_merge(tmp_path):
    log, bodies = GENERATED / "vllm" / "server.log", GENERATED / "openai-response" / "vllm-0.32.0-bodies.jsonl"
    r = _triage(tmp_path, [log], source_tz="UTC")
    assert _counts(r) == {"server.log": X.VLLM_COUNTS}
    assert r.sources[0]["served_model"] == "tiny-llama"                   # from `non-default args:`
    assert r.case.con.execute("SELECT count(*) FROM requests").fetchone()[0] == X.VLLM_REQUESTS
    both = _triage(tmp_path, [log, bodies], source_tz="UTC")
    c = both.case.con
    # log ids cmpl-X-0 are the bodies' cmpl-X: one request each, not two
    assert c.execute("SELECT count(*) FROM requests").fetchone()[0] == X.VLLM_REQUESTS
    assert c.execute("SELECT count(*) FROM requests WHERE list_contains(source_ids, 1) AND list_contains(source_ids, 2)"
                     ).fetchone()[0] == X.VLLM_BODY_IDS
    probe = _triage(tmp_path, [GENERATED / "real" / "vllm-0.32.0-cpu" / "requests.log"], source_tz="UTC", format="vllm")
    assert probe.case.con.execute("SELECT count(*) FROM requests").fetchone()[0] == X.VLLM_PROBE_REQUESTS


def test_nginx_log_from_nginx(tmp_path):
    r = _triage(tmp_path, [GENERATED / "nginx" / "access.json"])
    assert _counts(r) == {"access.json": X.NGINX_COUNTS}
    ids = {x[0] for x in r.case.con.execute("SELECT request_id FROM records").fetchall()}
    assert "client-4f1c2a" in ids                                         # the id the engine knew


def test_prometheus_scrapes_of_sglang_and_vllm(tmp_path):
    files = [GENERATED / "prometheus" / n for n in X.PROMETHEUS_BOUNDS]
    r = _triage(tmp_path, files)
    rows = r.case.con.execute("SELECT source_file, lower, upper FROM aggregate_findings").fetchall()
    assert {Path(str(f)).name: (lo, up) for f, lo, up in rows} == X.PROMETHEUS_BOUNDS


@pytest.mark.parametrize("name", sorted(X.OPENAI))
def test_openai_response_bodies_from_the_sdk(name, tmp_path):
    want = X.OPENAI[name]
    r = _triage(tmp_path, [GENERATED / "openai-response" / name])
    assert _counts(r) == {name: want["counts"]}
    assert affected_ids(r) == want["affected"]
    assert _by_category(r).get("undecidable", set()) == want["undecidable"]


def test_sdk_models_of_services_that_cannot_run(tmp_path):
    r = _triage(tmp_path, [GENERATED / "langfuse" / "api_v2_observations.json"])
    assert _counts(r) == {"api_v2_observations.json": X.LANGFUSE["counts"]}
    assert affected_ids(r) == X.LANGFUSE["affected"] and _by_category(r)["rejected"] == X.LANGFUSE["rejected"]
    for page in ("logs_page.json", "logs_page.compact.json"):
        r = _triage(tmp_path / page, [GENERATED / "cloudflare-gateway" / page])          # sniffed, pretty or not
        assert _counts(r) == {page: X.CLOUDFLARE["counts"]}
        assert affected_ids(r) == X.CLOUDFLARE["affected"] and _by_category(r)["rejected"] == X.CLOUDFLARE["rejected"]


@pytest.mark.parametrize("rel", sorted(X.GENERIC))
def test_generic_fixtures(rel, tmp_path):
    counts, affected = X.GENERIC[rel]
    fmt = "generic-" + rel.split("/")[0].split("-")[1]
    r = _triage(tmp_path, [GENERATED / rel], format=fmt)
    assert _counts(r) == {Path(rel).name: counts}
    assert affected_ids(r) == affected


def test_audit_reads_the_real_start_up_grammar():
    """The pool line of vLLM 0.32's CPU build is one line (`CPU KV cache size: N tokens, Maximum concurrency for
    M tokens per request: Xx`); SGLang 0.5.19+ dumps its settings as a dict."""
    from kvir.audit import audit

    v = audit([GENERATED / "real" / "vllm-0.32.0-cpu" / "startup.log"], source_tz="UTC", year=2026).node_configs
    assert (v["engine"].iloc[0], v["pool_tokens"].iloc[0], v["context_len"].iloc[0]) == ("vllm", 1_048_576, 2048)
    for build, canary in (("0.5.18", "none"), ("0.5.19", "none"), ("0.5.23", "none")):
        nc = audit([GENERATED / "sglang-json" / build / "prefill-0.log"], source_tz=CHI).node_configs
        row = nc.iloc[0]
        assert (row["role"], row["context_len"], row["page_size"], row["kv_canary"], row["served_model"]) == \
            ("prefill", 1_048_576, 64, canary, "zai-org/GLM-5.3"), build
