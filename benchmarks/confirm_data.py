"""Data for benchmarks/confirm_bench.py: natural English text, and a simulated incident whose every affected
response's truth is known by construction.

Text: the docstrings of the Python standard library (the interpreter running this), grouped per module into
documents of 400-2,500 characters. Technical prose with the phrases such prose repeats ("Return a new
...", "If the optional argument ..."), so unrelated documents share short spans as real text does.

The simulated incident (`incident(...)`): tenants send their own documents as prompts behind one system
prompt every tenant sends (boilerplate by design) and, for some, one template; ordinary responses are
snippets of documents nobody sent. Then the affected responses (prompts over the pool), each of a class:

    leak-prompt-L     L bytes of another tenant's earlier prompt (its own text, not the system prompt),
                      between a few words of the response's own prompt          truth: foreign, that request
    leak-response     300 bytes of another tenant's earlier (ordinary) response   truth: foreign, that request
    clean             a snippet of a document nobody sent                          truth: not foreign
    echo              300 bytes of its own tenant's earlier prompt                 truth: not foreign
    boilerplate       300 bytes of the system prompt, or of the template           truth: not foreign
    noise-bytes       random bytes decoded with replacement (U+FFFD, controls)     truth: corruption (replacement/noise)
    noise-salad       random subword tokens of several scripts                     truth: corruption (script shift)
    repetition        a word or a phrase repeated                                  truth: corruption (repetition)
    script-shift      Cyrillic or CJK syllables under a Latin prompt               truth: corruption (script shift)
"""
from __future__ import annotations

import ast
import json
import random
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

SYSTEM = ("You are the assistant of a logistics company's customer portal. Answer the customer's question from "
          "the documents in the conversation only; if they do not hold the answer, say that you do not know. Keep "
          "answers under two hundred words, never guess prices, never quote internal notes, and always end with "
          "a one-line summary. Format lists with dashes and dates as ISO 8601.")
TEMPLATE = "Use the context below to answer the question that follows it.\nContext:\n"
LEAK_LENGTHS = (16, 24, 32, 40, 48, 64, 96, 128, 256, 512)
_SALAD = ("ing", "tion", "的", "в", "ного", "です", "ment", "ала", "の", "是", "ly", "ру", "ка", "er", "ス", "ção", "ß")
_CYRILLIC = "абвгдежзиклмнопрстуфхцчшщыэюя"
_CJK = "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台象记边共风战干接它许八特觉望直服毛林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指思非流每青管夫连远资队跟带花快条院变联言权往展该领传近留红治决周保达办运武半候七必城父强步完革深区即求品士转量空甚众技轻程告江语英基派满式李息写呢识极令黄德收脸钱党倒未持取设始版双历越史商千片容研像找友孩站广改议形委早房音火际则首单据导影失拿网香似斯专石若兵弟谁校读志飞观争究包组造落视济喜离虽坏兴号"


@dataclass
class Doc:
    module: str
    text: str


def documents(min_chars: int = 400, max_chars: int = 2500) -> list[Doc]:
    """The standard library's docstrings as documents, per module (no module shares a document)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    docs = []
    for path in sorted(root.glob("*.py")) + sorted(root.glob("*/*.py")):
        rel = path.relative_to(root).parts
        if rel[0] in ("site-packages", "dist-packages") or "test" in rel[0] or path.name.startswith("test"):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        strings = []
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                d = ast.get_docstring(node)
                if d and len(d) >= 80:
                    strings.append(" ".join(d.split()))
        buf = ""
        for s in strings:
            buf = f"{buf} {s}".strip()
            if len(buf) >= min_chars:
                docs.append(Doc(str(path.relative_to(root)), buf[:max_chars]))
                buf = ""
    return docs


@dataclass
class Target:
    request_id: str
    kind: str                  # the class (module docstring)
    source: str | None         # the request whose text it holds (foreign classes)
    length: int | None = None  # the leak's length (leak-prompt)


def _span(rng: random.Random, text: str, n: int) -> str:
    b = text.encode()
    if len(b) <= n:
        return text
    start = rng.randrange(0, len(b) - n)
    return b[start:start + n].decode("utf-8", "ignore")


def incident(out: Path, seed: int = 11, tenants: int = 12, prompts_per_tenant: int = 30, per_class: int = 30):
    """Write out/logs.jsonl and out/incident.toml; return the targets with their truth."""
    rng = random.Random(seed)
    docs = documents()
    rng.shuffle(docs)
    modules = sorted({d.module for d in docs})
    rng.shuffle(modules)
    held_out = set(modules[: len(modules) // 4])            # documents nobody sends: clean answers
    by_tenant = {f"T{i:02d}": [] for i in range(tenants)}
    owners = {m: f"T{i % tenants:02d}" for i, m in enumerate(modules[len(modules) // 4:])}
    unsent = [d for d in docs if d.module in held_out]
    answers, clean = unsent[::2], unsent[1::2]       # ordinary responses and clean targets: no document shared
    for d in docs:
        if d.module in owners:
            by_tenant[owners[d.module]].append(d)
    records, sent, answered, second = [], [], [], 0
    for t, tdocs in by_tenant.items():
        for j, d in enumerate(tdocs[:prompts_per_tenant]):
            second += 1
            prompt = SYSTEM + "\n" + (TEMPLATE if int(t[1:]) % 3 == 0 else "") + d.text
            resp = _span(rng, rng.choice(answers).text, 300)
            rid = f"{t}-p{j:03d}"
            records.append(_record(rid, second, t, prompt, resp, over=False))
            sent.append((rid, t, d.text))
            answered.append((rid, t, resp))
    targets = []
    tenant_ids = list(by_tenant)

    def target(kind: str, text: str, tenant: str, source: str | None = None, length: int | None = None) -> None:
        nonlocal second
        second += 1
        rid = f"x{len(targets):04d}"
        own = by_tenant[tenant][0].text
        records.append(_record(rid, second, tenant, SYSTEM + "\n" + own + " " * 2 + own, text, over=True))
        targets.append(Target(rid, kind, source, length))

    for n in LEAK_LENGTHS:
        for _ in range(per_class):
            tenant = rng.choice(tenant_ids)
            rid, owner, text = rng.choice([s for s in sent if s[1] != tenant])
            lead = " ".join(by_tenant[tenant][0].text.split()[:4])
            target(f"leak-prompt-{n}", f"{lead} {_span(rng, text, n)} and so on", tenant, rid, n)
    for _ in range(per_class):
        tenant = rng.choice(tenant_ids)
        rid, owner, text = rng.choice([s for s in answered if s[1] != tenant])
        target("leak-response", _span(rng, text, 300), tenant, rid)
    for _ in range(2 * per_class):
        target("clean", _span(rng, rng.choice(clean).text, 300), rng.choice(tenant_ids))
    for _ in range(per_class):
        tenant = rng.choice(tenant_ids)
        target("echo", _span(rng, rng.choice([s for s in sent if s[1] == tenant])[2], 300), tenant)
    for i in range(per_class):
        target("boilerplate", _span(rng, SYSTEM if i % 2 else TEMPLATE + SYSTEM, 300), rng.choice(tenant_ids))
    for _ in range(per_class):
        target("noise-bytes", bytes(rng.randrange(256) for _ in range(200)).decode("utf-8", "replace"),
               rng.choice(tenant_ids))
        target("noise-salad", "".join(rng.choice(_SALAD) for _ in range(80)), rng.choice(tenant_ids))
        word = rng.choice(rng.choice(answers).text.split())
        phrase = " ".join(rng.choice(answers).text.split()[:6])
        target("repetition", " ".join([word] * 60) if rng.random() < 0.5 else " ".join([phrase] * 12),
               rng.choice(tenant_ids))
        alphabet = _CYRILLIC if rng.random() < 0.5 else _CJK
        target("script-shift", " ".join("".join(rng.choice(alphabet) for _ in range(rng.randint(2, 6)))
                                         for _ in range(50)), rng.choice(tenant_ids))
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "logs.jsonl", "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    (out / "incident.toml").write_text(SPEC.format(log=out / "logs.jsonl"))
    return targets


def _record(rid: str, second: int, tenant: str, prompt: str, response: str, over: bool) -> dict:
    return {"request_id": rid, "ts": 1788084000 + second, "account_id": tenant, "model": "m", "node": "n0",
            "prompt_tokens": 5000 if over else 600, "completion_tokens": 64, "finish_reason": "length",
            "http_status": 200, "prompt": prompt, "response": response}


SPEC = """[incident]
id = "CONFIRM-BENCH"
title = "simulated incident for kvir confirm"
models = ["m"]
window_start = 2026-08-28T00:00:00Z
window_end = 2026-09-28T00:00:00Z
[trigger]
pool_tokens = 4096
context_tokens = 8192
rule = "public"
[[sources]]
path = "{log}"
format = "generic-jsonl"
[sources.columns]
request_id = "request_id"
ts = "ts"
account_id = "account_id"
model = "model"
prompt_tokens = "prompt_tokens"
completion_tokens = "completion_tokens"
http_status = "http_status"
finish_reason = "finish_reason"
decode_node = "node"
"""

if __name__ == "__main__":
    print(len(documents()), "documents from", sys.version.split()[0])
