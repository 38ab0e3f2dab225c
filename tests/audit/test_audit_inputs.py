"""Bad input gives a clear error naming the file (or key), or a counted row; the inventory decides names."""
from __future__ import annotations

import gzip

import pandas as pd
import pytest

from kvir.audit import audit, load_inventory
from kvir.core.errors import InputError

from .conftest import one, rows, write

POOL = ("[2026-09-01 10:01:02 TP0] max_total_num_tokens=262144, chunked_prefill_size=8192, max_prefill_tokens=16384, "
        "max_running_requests=32, context_len=131072, available_gpu_mem=4.00 GB")


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(InputError, match="nope.log: no such file or folder"):
        audit([tmp_path / "nope.log"], source_tz="UTC")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="folder holds no files"):
        audit([tmp_path / "empty"], source_tz="UTC")


def test_truncated_gzip_is_named(tmp_path):
    data = gzip.compress((POOL + "\n").encode() * 2000)
    p = tmp_path / "node-0.log.gz"
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match=r"node-0\.log\.gz"):
        audit([p], source_tz="UTC")


def test_gzip_is_read(tmp_path):
    p = tmp_path / "node-1.log.gz"
    p.write_bytes(gzip.compress((POOL + "\n").encode()))
    assert one(audit([p], source_tz="UTC").node_configs)["pool_tokens"] == 262_144


def test_files_without_startup_lines_are_counted_rows(tmp_path):
    good = write(tmp_path / "good-0.log", POOL)
    write(tmp_path / "notes.txt", "nothing to see\nhere\n")
    (tmp_path / "empty.log").write_bytes(b"")
    write(tmp_path / "requests.jsonl", '{"timestamp": "2026-09-01T10:00:00", "event": "request.finished"}')
    write(tmp_path / "rt-prefill-9.log", "[2026-09-01 11:00:00 TP0] Input length (9 tokens) exceeds the maximum allowed "
                                         "length (5 tokens). Use a shorter input or enable --allow-auto-truncate., self.rid='x'")
    r = audit([tmp_path], source_tz="UTC")
    files = r.files.set_index(r.files["path"].map(lambda x: x.rsplit("/", 1)[1]))
    assert files.loc["notes.txt", "note"] == "no recognisable start-up lines" and files.loc["notes.txt", "lines_read"] == 2
    assert files.loc["empty.log", "note"] == "empty file (0 bytes)" and files.loc["empty.log", "lines_read"] == 0
    assert files.loc["requests.jsonl", "note"].startswith("JSON records") and files.loc["requests.jsonl", "lines_read"] == 0
    assert files.loc["rt-prefill-9.log", "note"] == "runtime lines only (no start-up lines)"
    assert pd.isna(files.loc["good-0.log", "note"]) and files.loc["good-0.log", "recognised"] == 1
    assert len(r.node_configs) == 1
    # the runtime line still counts, on the node its file names (role from the file name)
    ri = one(r.runtime_indicators)
    assert (ri["node"], ri["role"], ri["count"], ri["incident_signal"]) == ("rt-prefill-9", "prefill", 1, True)
    noted = set(r.problems.loc[r.problems["line"].isna(), "file"])
    assert len(noted) == 4 and str(good) not in noted
    # nothing recognisable anywhere: an error naming the inputs
    with pytest.raises(InputError, match="no recognisable start-up lines .* in any input: .*notes.txt"):
        audit([tmp_path / "notes.txt", tmp_path / "empty.log"], source_tz="UTC")


def test_overlong_line_is_counted(tmp_path):
    from kvir.audit import core

    p = write(tmp_path / "long-0.log", POOL + "\n" + "[2026-09-01 10:02:00] server_args=ServerArgs(" + "x" * 5000 + ")")
    from kvir.case.store import connect
    from kvir.core.sql import QueryLog

    con = connect(":memory:")
    plans = core.plan_files([p], None, "UTC", None)
    core.run(con, "audit/macros")
    core.run(con, "audit/create_tables")
    core._write_settings(con, plans, 1000)
    counts = core.parse_files(con, plans, QueryLog(), cri=False, first=True, max_line_bytes=1000)
    assert counts[1].lines == 2 and counts[1].too_long == 1
    assert con.execute("SELECT line_no, line_bytes FROM audit_too_long").fetchall() == [(2, 5046)]


INVENTORY = """
[defaults]
source_tz = "Europe/Berlin"
deployment = "glm"

[[node]]
name = "p-0"
role = "prefill"
version = "0.5.19"
logs = ["hosts/a/*.log"]
[node.env]
SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES = 1024

[nodes.d-0]
role = "decode"
engine = "sglang"
"""


def test_inventory_maps_files_and_supplies_what_logs_lack(tmp_path):
    inv = write(tmp_path / "inventory.toml", INVENTORY)
    write(tmp_path / "hosts/a/stdout.log", POOL)               # glob match
    write(tmp_path / "hosts/d-0/server.log", POOL)             # folder name match
    write(tmp_path / "hosts/x/other-1.log", POOL)              # not in the inventory: file name
    r = audit([tmp_path / "hosts"], inventory=inv, source_tz=None)
    nc = r.node_configs.set_index("node")
    assert nc.loc["p-0", "name_source"] == "inventory (logs glob)"
    assert nc.loc["d-0", "name_source"] == "inventory (folder name)"
    assert nc.loc["other-1", "name_source"] == "file name"      # not listed: [defaults] source_tz still applies
    assert nc.loc["p-0", "role"] == "prefill" and nc.loc["p-0", "role_source"] == "inventory"
    assert nc.loc["p-0", "version"] == "0.5.19" and nc.loc["p-0", "version_source"] == "inventory"
    assert nc.loc["p-0", "transfer_batch_cap"] == 1024 and nc.loc["p-0", "env_source"] == "batch cap: inventory"
    assert nc.loc["d-0", "deployment"] == "glm" and nc.loc["d-0", "role"] == "decode"
    # Europe/Berlin from the inventory (CEST): 10:01:02 local = 08:01:02 UTC
    assert str(nc.loc["p-0", "ts"]) == "2026-09-01 08:01:02+00:00"
    # without [defaults], a file the inventory does not list has no zone: refused, naming it
    inv2 = write(tmp_path / "inventory2.toml", INVENTORY.replace('source_tz = "Europe/Berlin"', ""))
    with pytest.raises(InputError, match=r"other-1\.log:1: start-up log times are host-local"):
        audit([tmp_path / "hosts/x"], inventory=inv2)
    assert rows(r.findings, node="other-1") == []


@pytest.mark.parametrize("text, key", [
    ('[[node]]\nname = "a"\nrole = "prefil"\n', "node[0].role"),
    ('[[node]]\nname = "a"\nvresion = "1"\n', "node[0].vresion"),
    ('[[node]]\nname = "a"\nversion = 0.5\n', "node[0].version"),
    ('[[node]]\nname = "a"\nsource_tz = "Mars/Base"\n', "node[0].source_tz"),
    ('[[node]]\nname = "a"\n[[node]]\nname = "a"\n', "node[1].name"),
    ('[nodes]\n', "node"),
    ('flavour = 1\n[[node]]\nname = "a"\n', "flavour"),
])
def test_inventory_errors_name_the_key(tmp_path, text, key):
    p = write(tmp_path / "inv.toml", text)
    with pytest.raises(InputError) as e:
        load_inventory(p)
    assert f"[{key}]" in str(e.value) and "inv.toml" in str(e.value)


def test_inventory_ambiguous_glob(tmp_path):
    inv = write(tmp_path / "inv.toml", '[[node]]\nname = "a"\nlogs = ["*.log"]\n[[node]]\nname = "b"\nlogs = ["x*.log"]\n')
    f = write(tmp_path / "x1.log", POOL)
    with pytest.raises(InputError, match="listed under several inventory nodes: a, b"):
        audit([f], inventory=inv, source_tz="UTC")


def test_rotated_copies_are_one_node_and_one_start(tmp_path):
    start = ("[2026-09-01 10:00:00] server_args=ServerArgs(model_path='m', context_length=131072)\n" + POOL + "\n")
    write(tmp_path / "decode-3/server.log", start + "[2026-09-02 10:01:02 TP0] " + POOL.split("] ", 1)[1].replace("262144", "300000"))
    (tmp_path / "decode-3/server.log.1.gz").write_bytes(gzip.compress(start.encode()))
    r = audit([tmp_path], source_tz="UTC")
    assert set(r.files["node"]) == {"decode-3"}
    assert r.node_configs["pool_tokens"].tolist() == [262_144, 300_000]      # the copied start is kept once
