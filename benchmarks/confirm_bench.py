"""kvir confirm, measured: precision and recall on a simulated incident, the threshold's false-positive rate on
unrelated pairs, and the fingerprint pass's throughput against a bare read of the same text.

    python benchmarks/confirm_bench.py [--quality] [--fpr] [--throughput --mb 64 --repeat 3]

--quality  benchmarks/confirm_data.py's incident through `kvir triage` and `kvir confirm`: per class the share of
           affected responses confirmed as foreign content (precision and recall of that verdict, recall per
           leak length, whether the best source is the true one) and each corruption detector's precision and
           recall on its class.
--fpr      10^5 unrelated (response, source) pairs: 320 responses (snippets of documents nobody sent) against
           320 prompts of 16 tenants, scored as kvir confirm scores a pair (own-tenant and boilerplate windows
           left out, weights by document frequency), with the shipped document-frequency cap and without it;
           the share of pairs at or over each threshold.
--throughput  OpenAI-style chat bodies (NDJSON) of --mb MB: (read) kvir's line reader alone; (extract) the same
           plus the text query (the bare read of the text); (pass) the same plus kvir confirm's pass (normalise,
           winnow, SipHash, write into a case). Each in a fresh process, repeats interleaved, best of each;
           peak RSS per process; the load average before and after.
Results: benchmarks/results/confirm.json; figures in benchmarks/README.md "Confirm".
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
from confirm_data import LEAK_LENGTHS, documents, incident  # noqa: E402

MAPS = {"request_id": ["request_id"], "prompt": ["prompt"], "response": ["response"]}
DETECTOR_CLASS = {"replacement": {"noise-bytes"}, "noise": {"noise-bytes"}, "repetition": {"repetition"},
                  "script shift": {"script-shift", "noise-salad"}}


def quality(work: Path, sh=None) -> dict:
    import kvir
    from kvir.confirm.run import ConfirmOptions, confirm

    targets = incident(work / "incident")
    t = kvir.triage(work / "incident" / "incident.toml", out=work / "case")
    t.case.close()
    from kvir.confirm.fingerprint import Shingling

    key = work / "key"           # fixed, so that a rerun keeps the same windows (another key moves borderline cases)
    key.write_text("kvir-confirm-key-v1 " + "6b" * 32 + "\n")
    key.chmod(0o600)
    r = confirm(work / "case", [work / "incident" / "logs.jsonl"],
                ConfirmOptions(key=key, maps=MAPS, shingling=sh or Shingling()))
    tenant_of = dict(zip(r.case.df("requests")["request_id"], r.case.df("requests")["account_id"]))
    c = r.confirmations.set_index("request_id")
    s = r.sources
    best = {rid: set(g[g["rank"] == 1]["source_request_id"]) for rid, g in s.groupby("request_id")}
    rows = []
    for tg in targets:
        row = c.loc[tg.request_id]
        rows.append({"kind": tg.kind, "foreign": tg.source is not None, "length": tg.length,
                     "confirmed": row["verdict"] == "confirmed foreign content",
                     "right_source": tg.source in best.get(tg.request_id, set()),
                     "right_tenant": tg.source is not None and tenant_of.get(tg.source) in
                     {tenant_of.get(b) for b in best.get(tg.request_id, set())},
                     "detectors": list(row["corruption"]), "verdict": row["verdict"]})
    tp = sum(x["confirmed"] and x["foreign"] for x in rows)
    fp = sum(x["confirmed"] and not x["foreign"] for x in rows)
    fn = sum(not x["confirmed"] and x["foreign"] for x in rows)
    per_class = {}
    for x in rows:
        k = per_class.setdefault(x["kind"], {"n": 0, "confirmed": 0, "right_source": 0, "right_tenant": 0, "verdicts": {}})
        k["n"] += 1
        k["confirmed"] += x["confirmed"]
        k["right_source"] += x["confirmed"] and x["right_source"]
        k["right_tenant"] += x["confirmed"] and x["right_tenant"]
        k["verdicts"][x["verdict"]] = k["verdicts"].get(x["verdict"], 0) + 1
    detectors = {}
    for d, cls in DETECTOR_CLASS.items():
        fired = [x for x in rows if d in x["detectors"]]
        pos = [x for x in rows if x["kind"] in cls]
        hit = sum(x["kind"] in cls for x in fired)
        detectors[d] = {"classes": sorted(cls), "fired": len(fired), "precision": _ratio(hit, len(fired)),
                        "recall": _ratio(sum(d in x["detectors"] for x in pos), len(pos)),
                        "false_fires_by_class": _count(x["kind"] for x in fired if x["kind"] not in cls)}
    return {"targets": len(rows), "precision": _ratio(tp, tp + fp), "recall": _ratio(tp, tp + fn),
            "true_positives": tp, "false_positives": fp, "false_negatives": fn,
            "recall_by_length": {n: per_class[f"leak-prompt-{n}"]["confirmed"] / per_class[f"leak-prompt-{n}"]["n"]
                                 for n in LEAK_LENGTHS},
            "per_class": per_class, "detectors": detectors, "thresholds": r.summary["thresholds"],
            "shingling": r.summary["shingling"]}


def fpr(work: Path, n: int = 320, tenants: int = 16, sh=None) -> dict:
    """Pairs of unrelated texts scored as kvir confirm scores them (queries/confirm/matches.sql's rules, every
    pair: no latest-writer choice), with the shipped document-frequency cap and without one."""
    import duckdb
    import pyarrow as pa

    from kvir.confirm.fingerprint import Shingling, fingerprints, normalise
    from kvir.confirm.key import derive
    from kvir.confirm.run import Thresholds

    rng = random.Random(5)
    docs = documents()
    mods = sorted({d.module for d in docs})
    rng.shuffle(mods)
    half = set(mods[: len(mods) // 2])
    resp = [d for d in docs if d.module in half]
    srcs = [d for d in docs if d.module not in half]
    rng.shuffle(resp)
    rng.shuffle(srcs)
    texts = [_snip(rng, d.text, 300) for d in resp[:n]] + [d.text for d in srcs[:n]]
    key = derive(b"kvir-confirm-benchmark-fpr-key!!")     # fixed: the same pairs score alike every run
    f = fingerprints(normalise(pa.array(texts)), key, sh or Shingling())
    con = duckdb.connect()
    con.register("fp", pa.table({"doc": f.doc, "fp": f.fp}))
    con.execute("CREATE TABLE p AS SELECT doc, fp, CASE WHEN doc < $n THEN 'R' ELSE 'S' || ((doc - $n) % $t) END AS tenant "
                "FROM fp", {"n": n, "t": tenants})
    out = {"pairs": n * n, "responses": n, "sources": n, "source_tenants": tenants, "by_threshold": {}}
    for cap_name, cap in (("shipped", Thresholds().max_df), ("none", 10**9)):
        scores = con.execute("""
            WITH df AS (SELECT fp, count(DISTINCT tenant) FILTER (WHERE tenant <> 'R') AS df FROM p GROUP BY fp),
            pairs AS (
                SELECT r.doc AS rdoc, s.doc AS sdoc, sum(1.0 / greatest(d.df, 1)) AS score
                FROM p AS r JOIN p AS s ON s.fp = r.fp AND s.tenant <> 'R' JOIN df AS d ON d.fp = r.fp
                WHERE r.tenant = 'R' AND d.df <= $cap GROUP BY r.doc, s.doc)
            SELECT rdoc, sdoc, score FROM pairs""", {"cap": cap}).fetchall()
        s = sorted(x[2] for x in scores)
        out["by_threshold"][cap_name] = {str(t): sum(x >= t for x in s) / (n * n) for t in (1, 1.5, 2, 3, 4, 5, 6, 8)}
        out[f"max_score_{cap_name}"] = max(s) if s else 0
        # what the pairs at 2 or more share: the longest common span (plain string search; lengths only)
        out[f"pairs_at_2_or_more_{cap_name}"] = sorted(
            ({"score": sc, "longest_common_chars": _longest(texts[a], texts[b]),
              "modules": [resp[a].module, srcs[b - n].module]} for a, b, sc in scores if sc >= 2),
            key=lambda x: -x["score"])
    return out


def _longest(a: str, b: str) -> int:
    from difflib import SequenceMatcher

    return SequenceMatcher(None, a, b, autojunk=False).find_longest_match(0, len(a), 0, len(b)).size


def throughput(work: Path, mb: int, repeat: int) -> dict:
    path = work / "bodies.jsonl"
    if not path.exists():
        _bodies(path, mb)
    modes = ("read", "extract", "pass")
    runs = {m: [] for m in modes}
    load = [os.getloadavg()]
    for _ in range(repeat):
        for m in modes:
            p = subprocess.run([sys.executable, __file__, "--one", m, str(path), str(work)], capture_output=True,
                               text=True, check=True)
            runs[m].append(json.loads(p.stdout.strip().splitlines()[-1]))
    load.append(os.getloadavg())
    best = {m: min(runs[m], key=lambda x: x["seconds"]) for m in modes}
    size = path.stat().st_size
    return {"bytes": size, "best": best, "runs": runs, "loadavg_before_after": load,
            "pass_over_extract": best["pass"]["seconds"] / best["extract"]["seconds"],
            "pass_over_read": best["pass"]["seconds"] / best["read"]["seconds"],
            "mb_per_s": {m: size / best[m]["seconds"] / 1e6 for m in modes}}


def one(mode: str, path: Path, work: Path) -> dict:
    """One throughput mode in this (fresh) process."""
    import duckdb
    import pyarrow.compute as pc

    from kvir.confirm.fingerprint import Shingling
    from kvir.confirm.key import derive
    from kvir.confirm.run import _text_connection
    from kvir.confirm.scan import Plants, Scan
    from kvir.confirm.text import TEXT_FORMATS, Extractor, TextSource, record_batches
    from kvir.ingest.lines import iter_line_batches

    src = TextSource(1, path, TEXT_FORMATS["openai-response"], "given")
    spill = Path(tempfile.mkdtemp(dir=work))
    t0 = time.perf_counter()
    n = 0
    if mode == "read":
        for b in iter_line_batches(path, text=True):
            n += b.num_rows
    elif mode == "extract":
        con = _text_connection(spill, None)
        ex = Extractor(con, src)
        for b in record_batches(con, src, spill):
            n += ex.texts(b).num_rows
        n += ex.flush().num_rows
    else:
        from kvir.case.store import Case

        case = Case.create(work / f"case-{os.getpid()}")
        case.run("confirm/tables")
        import pyarrow as pa

        scan = Scan(case, _text_connection(spill, None), derive(b"\x07" * 32), Shingling(), pa.array([], pa.string()),
                    None, Plants(), spill)
        scan.source(src)
        n = scan.next_doc
        case.con.execute("CHECKPOINT")
    seconds = time.perf_counter() - t0
    del duckdb, pc
    return {"mode": mode, "seconds": seconds, "texts": n, "peak_rss_mb": _peak_rss_mb()}


def _peak_rss_mb() -> float:
    """This process's peak resident set (VmHWM: its own address space's, begun afresh at exec; ru_maxrss
    would carry the parent's size across the exec)."""
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _bodies(path: Path, mb: int) -> None:
    rng = random.Random(3)
    docs = [d.text for d in documents()]
    with open(path, "w", encoding="utf-8") as f:
        size, i = 0, 0
        while size < mb << 20:
            text = _snip(rng, rng.choice(docs), rng.randint(200, 2000)) + f" ({i})"
            line = json.dumps({"id": f"chatcmpl-{i:08d}", "object": "chat.completion", "created": 1788084000 + i,
                               "model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                                          "finish_reason": "stop"}],
                               "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}})
            f.write(line + "\n")
            size += len(line) + 1
            i += 1


def _snip(rng: random.Random, text: str, n: int) -> str:
    if len(text) <= n:
        return text
    start = rng.randrange(0, len(text) - n)
    return text[start:start + n]


def _ratio(a: int, b: int) -> float | None:
    return a / b if b else None


def _count(items) -> dict:
    out: dict = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quality", action="store_true")
    ap.add_argument("--fpr", action="store_true")
    ap.add_argument("--throughput", action="store_true")
    ap.add_argument("--mb", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", type=Path, default=ROOT / "data" / "confirm")
    ap.add_argument("--one", nargs=3)
    ap.add_argument("--k", type=int, default=None, help="window bytes (default: kvir's)")
    ap.add_argument("--w", type=int, default=None, help="winnowing width (default: kvir's)")
    ap.add_argument("--tag", default="", help="results key suffix (a shingling variant)")
    a = ap.parse_args()
    if a.one:
        print(json.dumps(one(a.one[0], Path(a.one[1]), Path(a.one[2]))))
        return 0
    everything = not (a.quality or a.fpr or a.throughput)
    a.work.mkdir(parents=True, exist_ok=True)
    res_path = ROOT / "results" / "confirm.json"
    res = json.loads(res_path.read_text()) if res_path.exists() else {}
    res["machine"] = {"python": sys.version.split()[0], "cpus": os.cpu_count(), "loadavg": os.getloadavg(),
                      "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    from kvir.confirm.fingerprint import Shingling

    d = Shingling()
    sh = Shingling(a.k or d.k, a.w or d.w)
    with tempfile.TemporaryDirectory(dir=a.work) as tmp:
        if a.quality or everything:
            res["quality" + a.tag] = quality(Path(tmp) / "q", sh)
        if a.fpr or everything:
            res["fpr" + a.tag] = fpr(Path(tmp), sh=sh)
    if a.throughput or everything:
        res["throughput"] = throughput(a.work, a.mb, a.repeat)
    res_path.parent.mkdir(exist_ok=True)
    res_path.write_text(json.dumps(res, indent=1, default=str) + "\n")
    print(json.dumps({k: v for k, v in res.items() if k != "throughput" or True}, indent=1, default=str)[:6000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
