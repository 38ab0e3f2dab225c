"""Cloudflare AI Gateway logs, the generic CSV / JSONL / Parquet mappings, and several sources at once."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq

import kvir
from tests.conftest import ids, sglang_finished as fin, write


def gw(id_, created, model, tokens_in, status=200, customer="cust-a", metadata_as_string=True, **more):
    md = {"customer_id": customer}
    rec = {"id": id_, "created_at": created, "provider": "workers-ai", "model": model, "success": status == 200,
           "status_code": status, "cached": False, "tokens_in": tokens_in, "tokens_out": 12, "duration": 1500,
           "metadata": json.dumps(md) if metadata_as_string else md}
    rec.update(more)
    return rec


GLM, AIR = "@cf/zai-org/glm-5.3", "@cf/zai-org/glm-5.3-air"


def test_gateway_rest_page_and_ndjson(spec, tmp_path):
    page = {"result": [
        gw("g1", "2026-08-29T04:10:00.000Z", GLM, 681281, customer="cust-acme"),
        gw("g2", "2026-08-29T04:11:00.000Z", GLM, 681280, customer="cust-acme"),      # = pool: no
        gw("g3", "2026-08-29T04:12:00.000Z", AIR, 900000, customer="cust-acme"),      # other model
        gw("g4", "2026-08-29T04:13:00.000Z", GLM, "700000", customer="cust-init"),    # tokens as string
        gw("g5", "2026-08-29T04:14:00.000Z", GLM, 1048577, status=400, customer="cust-init"),  # rejected
        gw("g6", "2026-08-29T04:15:00.000Z", GLM, None, status=504, customer="cust-init"),     # failed (length unknown)
        gw("g7", "2026-09-09T19:40:00.000Z", GLM, 800000, customer="cust-x"),          # window end: in
        gw("g8", "2026-09-09T19:40:00.001Z", GLM, 800000, customer="cust-x"),          # 1 ms after: out
        gw("g9", "2026-08-26T23:59:59.999Z", GLM, 800000, customer="cust-x"),          # before: out
        {"id": "g10", "model": GLM},                                                    # no created_at
    ], "result_info": {"count": 10, "page": 1, "per_page": 50, "total_count": 10}, "success": True,
        "errors": [], "messages": []}
    p1 = write(tmp_path / "gw" / "page-1.json", json.dumps(page, indent=2))   # pretty-printed page
    nd = [gw("n1", "2026-08-30T00:00:00Z", GLM, 999999, customer="cust-obj", metadata_as_string=False),
          gw("n2", "2026-08-30T00:00:01Z", "zai-org/GLM-5.3", 999999, customer="cust-alias")]
    p2 = write(tmp_path / "gw" / "more.ndjson", "\n".join(json.dumps(x) for x in nd) + "\n{broken\n")
    r = kvir.triage(spec(), [tmp_path / "gw"], out=tmp_path / "case")
    assert ids(r.affected) == {"g1", "g4", "g7", "n1", "n2"}
    assert dict(zip(r.accounts["account_id"], r.accounts["affected"])) == {
        "cust-acme": 1, "cust-init": 1, "cust-x": 1, "cust-obj": 1, "cust-alias": 1}
    assert (r.summary["rejected"], r.summary["failed"], r.summary["undecidable"]) == (1, 1, 0)   # g6: a 504, not served
    by = {s["label"]: s for s in r.sources}
    assert all(s["format"] == "cloudflare-gateway" for s in r.sources)
    assert (by[str(p1)]["read"], by[str(p1)]["quarantined"]) == (10, 1)        # g10: record 10 of the page
    assert (by[str(p2)]["read"], by[str(p2)]["quarantined"]) == (3, 1)         # the broken third line
    q = r.quarantine
    assert dict(zip(q["source_line"], q["reason"])) == {10: "missing timestamp", 3: "malformed JSON"}


def test_gateway_and_engine_logs_are_one_request(spec, tmp_path):
    """The gateway names the customer, the engine the node: merged by the shared request id."""
    page = {"result": [gw("01ABC", "2026-08-30T15:00:00.000Z", GLM, 700000, customer="cust-acme")],
            "success": True}
    write(tmp_path / "gw" / "p.json", json.dumps(page))
    write(tmp_path / "engine" / "decode-3" / "requests.jsonl",
          fin("2026-08-30T10:02:00", "01ABC", 700000, latency=119.9, room=7) + "\n")
    write(tmp_path / "engine" / "prefill-1" / "requests.jsonl",
          fin("2026-08-30T10:00:01", "9f9f", 1, latency=0.5, room=7) + "\n")
    extra = '\n[[sources]]\npath = "engine/*/requests.jsonl"\nsource_tz = "America/Chicago"\nserved_model = "zai-org/GLM-5.3"\n'
    r = kvir.triage(spec(extra=extra), [tmp_path / "gw", tmp_path / "engine"], out=tmp_path / "case")
    assert len(r.affected) == 1
    row = r.affected.iloc[0]
    assert (row["request_id"], row["account_id"]) == ("01ABC", "cust-acme")
    assert (row["prefill_node"], row["decode_node"], row["prefill_tokens"]) == ("prefill-1", "decode-3", 1)
    assert row["n_records"] == 3 and not row["conflict"]
    assert r.case.con.execute("SELECT count(*) FROM requests").fetchone()[0] == 1


def test_generic_csv_with_mapping_epoch_ms_and_formula_cells(spec, tmp_path):
    csv = ("req,started_ms,who,mdl,n_in,code\n"
           "c1,1787788800000,=HYPERLINK(\"http://x\"),zai-org/GLM-5.3,681281,200\n"   # 2026-08-27T00:00:00Z exactly
           "c2,1787788799999,cust-b,zai-org/GLM-5.3,681281,200\n"                     # 1 ms before the window
           "c3,1787800000000,cust-b,zai-org/GLM-5.3,abc,200\n"                        # bad count
           "c4,1787800000000,cust-b,zai-org/GLM-5.3,700000\n"                         # missing column
           "c5,99,cust-b,zai-org/GLM-5.3,700000,200\n")                               # implausible epoch
    write(tmp_path / "export.csv", csv)
    extra = ('\n[[sources]]\npath = "export.csv"\nformat = "generic-csv"\n[sources.columns]\nrequest_id = "req"\n'
             'ts = "started_ms"\naccount_id = "who"\nmodel = "mdl"\nprompt_tokens = "n_in"\nhttp_status = "code"\n')
    r = kvir.triage(spec(extra=extra), out=tmp_path / "case")
    assert ids(r.affected) == {"c1"}
    s = r.sources[0]
    assert (s["read"], s["parsed"], s["quarantined"]) == (5, 2, 3)
    reasons = " | ".join(r.quarantine["reason"])
    assert "not a non-negative integer" in reasons and "implausible epoch" in reasons
    text = (tmp_path / "case" / "affected.csv").read_text()
    assert "'=HYPERLINK" in text and ",=HYPERLINK" not in text   # neutralised for spreadsheets


def test_generic_jsonl_nested_paths_and_seconds(spec, tmp_path):
    lines = [
        {"id": "j1", "created": 1787788800, "model": "zai-org/GLM-5.3", "usage": {"prompt_tokens": 681281},
         "user": "u1", "status": 200},
        {"id": "j2", "created": "1787788800", "model": "zai-org/GLM-5.3", "usage": {"prompt_tokens": 681279},
         "user": "u1", "status": 200},
    ]
    write(tmp_path / "bodies.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n[1, 2]\n")
    extra = ('\n[[sources]]\npath = "bodies.jsonl"\nformat = "generic-jsonl"\n[sources.columns]\n'
             'request_id = "id"\nts = "created"\nmodel = "model"\nprompt_tokens = "usage.prompt_tokens"\n'
             'account_id = "user"\nhttp_status = "status"\n')
    r = kvir.triage(spec("engine", extra=extra, engine="sglang"), out=tmp_path / "case")
    assert ids(r.affected) == {"j1", "j2"}            # SGLang's engine rule: 681,279 >= 681,274
    assert r.sources[0]["quarantined"] == 1 and r.quarantine["reason"][0] == "JSON value is not an object"


def test_generic_parquet_naive_timestamps_need_a_zone(spec, tmp_path):
    import datetime as dt

    t = pa.table({
        "rid": ["q1", "q2", "q3"],
        "when": pa.array([dt.datetime(2026, 8, 26, 20, 0), dt.datetime(2026, 8, 26, 18, 59, 59),
                          dt.datetime(2026, 9, 1, 0, 0)], pa.timestamp("us")),   # naive local (UTC-5)
        "model": ["zai-org/GLM-5.3"] * 3,
        "prompt": [700000, 700000, 10],
        "status": [200, 200, 200],
    })
    pq.write_table(t, tmp_path / "req.parquet")
    extra = ('\n[[sources]]\npath = "req.parquet"\nformat = "generic-parquet"\nsource_tz = "America/Chicago"\n'
             '[sources.columns]\nrequest_id = "rid"\nts = "when"\nmodel = "model"\nprompt_tokens = "prompt"\n'
             'http_status = "status"\n')
    r = kvir.triage(spec(extra=extra), out=tmp_path / "case")
    assert ids(r.affected) == {"q1"}                 # q1 = 2026-08-27T01:00Z; q2 = 2026-08-26T23:59:59Z
    assert r.affected["source_line"].tolist() == [1]


def test_canonical_parquet_needs_no_mapping_and_is_read_in_place(spec, tmp_path):
    import datetime as dt

    def day(date: dt.datetime, ids_: list[str], prompts: list[int]) -> pa.Table:
        return pa.table({
            "request_id": ids_,
            "ts": pa.array([date] * len(ids_), pa.timestamp("us", tz="UTC")),
            "account_id": ["x"] * len(ids_), "model": ["@cf/zai-org/glm-5.3"] * len(ids_),
            "prompt_tokens": pa.array(prompts, pa.int64()), "http_status": pa.array([200] * len(ids_), pa.int32()),
        })

    d1 = write(tmp_path / "data" / "dt=2026-08-28" / "part-0.parquet", b"")
    d2 = write(tmp_path / "data" / "dt=2026-08-29" / "part-0.parquet", b"")
    pq.write_table(day(dt.datetime(2026, 8, 28, tzinfo=dt.timezone.utc), ["a", "b"], [681281, 5]), d1)
    pq.write_table(day(dt.datetime(2026, 8, 29, tzinfo=dt.timezone.utc), ["c", "d", "e"], [5, 5, 700000]), d2)
    r = kvir.triage(spec(), [tmp_path / "data"], out=tmp_path / "case")
    assert ids(r.affected) == {"a", "e"}
    where = {row.request_id: (row.source_file, row.source_line) for row in r.affected.itertuples()}
    assert where == {"a": (str(d1), 1), "e": (str(d2), 3)}      # the file of the dataset and its row
    con = r.case.con
    kind = con.execute("SELECT table_type FROM information_schema.tables WHERE table_name = 'records_src1'").fetchone()
    assert kind == ("VIEW",)                           # never copied into the case
    assert any("statistics prove no row is bad" in n for n in r.sources[0]["notes"])
