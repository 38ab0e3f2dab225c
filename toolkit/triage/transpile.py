"""kvir's DuckDB query files as Spark SQL, by sqlglot: the same questions, values still bound.

    q = spark_query("triage/accounts")   # SparkQuery: Spark SQL with :name markers, the table it makes, params

For queries/<name>.sql (one statement, written for DuckDB):
  1. parse it with sqlglot (read="duckdb");
  2. inline kvir's SQL macros (queries/macros.sql, `CREATE MACRO f(a, b) AS expr`; Spark has no untyped
     SQL macros) by substituting the arguments into the body's AST, as DuckDB does, until none is left;
  3. rewrite what sqlglot 30 translates wrongly: `strftime(ts, '%Y-%m-%dT%H:%M:%SZ')` becomes
     `date_format(ts, 'yyyy-MM-dd''T''HH:mm:ss''Z''')` (sqlglot maps the letters but leaves literal text
     unquoted, which Spark refuses, and an unquoted Z would print the zone offset);
  4. refuse what Spark would run differently or not at all: a macro call left over, an ASOF join (sqlglot
     passes it through and Spark reads `asof` as an alias), a function sqlglot does not know (it would be
     passed through by name);
  5. write Spark SQL; `$name` becomes the Spark named parameter marker `:name`.
A file `CREATE [OR REPLACE] [TEMP] TABLE t AS <query>` yields <query> and target `t` (kvir.triage.spark makes
it a cached temporary view: spark_catalog has no REPLACE TABLE AS SELECT; `temporary`: the DuckDB file makes
a temporary table, a step between two queries rather than a table of the case).

A mechanism's query is named as kvir.core.sql.load resolves it (its Query.name, e.g.
"mechanisms/<folder>/triage/hits"). Where a construct does not transpile, queries/<name>.spark.sql beside
the DuckDB file is used instead:
Spark SQL with `:name` markers, a header like every query file (`-- name: ...`, `-- Params: :a, :b`), and
optionally `CREATE OR REPLACE TABLE t AS`. None is needed today (tests/spark/test_transpile.py).
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from kvir.core.errors import KvirError
from kvir.core.sql import load, strip_sql_literals

# functions the rewrites below emit by name (sqlglot has no node for them): known to Spark
_EMITTED = {"date_format"}
_STRFTIME = {"%Y": "yyyy", "%m": "MM", "%d": "dd", "%H": "HH", "%M": "mm", "%S": "ss", "%f": "SSSSSS",
             "%y": "yy", "%j": "DDD", "%b": "MMM", "%B": "MMMM", "%a": "EEE", "%A": "EEEE", "%z": "xx",
             "%%": "%"}
_CTAS = re.compile(r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(TEMP(?:ORARY)?\s+)?TABLE\s+([a-z][a-z0-9_]*)\s+AS\s+",
                   re.I)
_MARKER = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


class TranspileError(KvirError):
    """A query file that cannot be run on Spark as written (the message names the file and construct)."""


@dataclass(frozen=True)
class SparkQuery:
    name: str
    sql: str                     # Spark SQL of the query itself (SELECT / WITH ... SELECT), `:name` markers
    target: str | None           # the table the DuckDB file creates, else None
    params: tuple[str, ...]      # the `:names` used, in order of first use
    origin: str                  # queries/<name>.sql (transpiled) or queries/<name>.spark.sql (override)
    source_sha256: str           # SHA-256 of the file the SQL came from
    macros: tuple[str, ...] = ()     # macros inlined
    rewrites: tuple[str, ...] = ()   # rewrites applied (step 3)
    temporary: bool = False          # the DuckDB file makes a temporary table (CREATE TEMP TABLE)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def _sqlglot():
    try:
        import sqlglot
    except ImportError:
        raise KvirError("the Spark engine needs sqlglot and pyspark: pip install 'kvir[spark]'") from None
    return sqlglot


@dataclass(frozen=True)
class Macro:
    name: str
    params: tuple[str, ...]
    body: object                 # sqlglot expression


@lru_cache(maxsize=None)
def duckdb_macros() -> dict[str, Macro]:
    """The scalar macros of queries/macros.sql as sqlglot trees, by lower-case name."""
    sqlglot = _sqlglot()
    from sqlglot import exp

    out: dict[str, Macro] = {}
    for tree in sqlglot.parse(load("macros").text, read="duckdb"):
        if isinstance(tree, exp.Create) and str(tree.args.get("kind")).upper() == "MACRO" and tree.expression:
            udf = tree.this
            name = udf.this.name.lower()
            out[name] = Macro(name, tuple(p.name for p in udf.expressions), tree.expression)
    return out


def inline_macros(tree, macros: dict[str, Macro], where: str) -> tuple[object, list[str]]:
    """Every macro call replaced by its body with the arguments put in (outermost first, repeated)."""
    from sqlglot import exp

    used: list[str] = []
    for _ in range(10_000):
        call = next((n for n in tree.find_all(exp.Anonymous) if str(n.this).lower() in macros), None)
        if call is None:
            return tree, used
        m = macros[str(call.this).lower()]
        if len(call.expressions) != len(m.params):
            raise TranspileError(f"{where}: {m.name}() takes {len(m.params)} arguments, not {len(call.expressions)}")
        binding = dict(zip(m.params, call.expressions))
        body = m.body.copy()
        # collect first, then replace: an argument put in is never searched for parameter names again
        for col in [c for c in body.find_all(exp.Column) if not c.table and c.name in binding]:
            arg = binding[col.name]
            new = arg.copy() if isinstance(arg, (exp.Column, exp.Literal, exp.Placeholder, exp.Paren, exp.Func,
                                                 exp.Null, exp.Boolean)) else exp.Paren(this=arg.copy())
            if col is body:
                body = new
            else:
                col.replace(new)
        new_node = exp.Paren(this=body)
        if call is tree:
            tree = new_node
        else:
            call.replace(new_node)
        used.append(m.name)
    raise TranspileError(f"{where}: macro expansion does not end (a macro calls itself?)")


def strftime_to_java(fmt: str) -> str:
    """A strftime format as a Java DateTimeFormatter pattern, literal text quoted
    ('%Y-%m-%dT%H:%M:%SZ' -> "yyyy-MM-dd'T'HH:mm:ss'Z'")."""
    out: list[str] = []
    lit: list[str] = []

    def flush() -> None:
        if lit:
            out.append("'" + "".join(lit).replace("'", "''") + "'")
            lit.clear()

    i = 0
    while i < len(fmt):
        two = fmt[i:i + 2]
        if two in _STRFTIME:
            flush()
            out.append(_STRFTIME[two])
            i += 2
        elif fmt[i] == "%":
            raise TranspileError(f"strftime directive {two!r} has no Spark pattern here")
        elif fmt[i] in "-:./ ,":
            flush()
            out.append(fmt[i])
            i += 1
        else:
            lit.append(fmt[i])
            i += 1
    flush()
    return "".join(out)


def rewrite_for_spark(tree) -> tuple[object, list[str]]:
    """Step 3 of the module docstring."""
    from sqlglot import exp

    applied: list[str] = []

    def fix(node):
        if isinstance(node, exp.TimeToStr) and isinstance(node.args.get("format"), exp.Literal):
            applied.append("strftime")
            return exp.Anonymous(this="date_format", expressions=[
                node.this, exp.Literal.string(strftime_to_java(node.args["format"].this))])
        return node

    return tree.transform(fix), applied


def refuse_unportable(tree, macros: dict[str, Macro], where: str) -> None:
    """Step 4 of the module docstring."""
    from sqlglot import exp

    for j in tree.find_all(exp.Join):
        if str(j.args.get("method") or "").upper() == "ASOF":
            raise TranspileError(f"{where}: ASOF JOIN does not transpile to Spark; write it as a window "
                                 "(as triage/hits_pool_in_effect does) or add a .spark.sql override")
    for f in tree.find_all(exp.Anonymous):
        name = str(f.this).lower()
        if name in macros:
            raise TranspileError(f"{where}: macro {name}() left after inlining")
        if name not in _EMITTED:
            raise TranspileError(f"{where}: {name}() has no Spark translation in sqlglot; write a portable "
                                 f"form or add queries/{where.removeprefix('queries/').removesuffix('.sql')}.spark.sql")


def transpile(name: str, text: str, macros: dict[str, Macro] | None = None) -> SparkQuery:
    """queries/<name>.sql (its text) as a SparkQuery (see the module docstring)."""
    sqlglot = _sqlglot()
    from sqlglot import exp

    where = f"queries/{name}.sql"
    macros = duckdb_macros() if macros is None else macros
    try:
        trees = [t for t in sqlglot.parse(text, read="duckdb") if t is not None]
    except sqlglot.errors.ParseError as e:
        raise TranspileError(f"{where}: sqlglot cannot parse it: {str(e).splitlines()[0]}") from None
    if len(trees) != 1:
        raise TranspileError(f"{where}: {len(trees)} statements; the Spark engine runs files of one statement")
    tree, target, temporary = trees[0], None, False
    if isinstance(tree, exp.Create):
        if str(tree.args.get("kind")).upper() != "TABLE" or tree.expression is None:
            raise TranspileError(f"{where}: only CREATE TABLE ... AS <query> or a query runs on Spark")
        target = tree.this.name if isinstance(tree.this, exp.Table) else tree.this.this.name
        temporary = tree.find(exp.TemporaryProperty) is not None
        tree = tree.expression
    tree, used = inline_macros(tree, macros, where)
    tree, applied = rewrite_for_spark(tree)
    refuse_unportable(tree, macros, where)
    params = tuple(dict.fromkeys(p.name for p in tree.find_all(exp.Placeholder)))
    sql = tree.sql(dialect="spark", pretty=True, comments=False)
    return SparkQuery(name, sql, target, params, where, hashlib.sha256(text.encode()).hexdigest(),
                      tuple(dict.fromkeys(used)), tuple(dict.fromkeys(applied)), temporary)


def parse_override(name: str, text: str) -> SparkQuery:
    """queries/<name>.spark.sql: Spark SQL as written (see the module docstring)."""
    where = f"queries/{name}.spark.sql"
    header = [line[2:].strip() for line in text.splitlines() if line.startswith("--")]
    declared = next((tuple(re.findall(r":([A-Za-z_]\w*)", h)) for h in header if h.lower().startswith("params:")), None)
    if declared is None:
        raise TranspileError(f"{where}: no '-- Params:' line (write '-- Params: :a, :b' or '-- Params: none')")
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--")).strip().rstrip(";")
    m = _CTAS.match(body)
    sql = body[m.end():] if m else body
    params = tuple(dict.fromkeys(_MARKER.findall(strip_sql_literals(sql))))
    if set(params) != set(declared):
        raise TranspileError(f"{where} documents {sorted(declared)} but uses {sorted(params)}")
    return SparkQuery(name, sql, m.group(2) if m else None, params, where, hashlib.sha256(text.encode()).hexdigest(),
                      temporary=bool(m and m.group(1)))


def override_text(name: str) -> str | None:
    path = resources.files("kvir.queries").joinpath(*f"{name}.spark.sql".split("/"))
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


@lru_cache(maxsize=None)
def spark_query(name: str) -> SparkQuery:
    """The Spark form of queries/<name>.sql: its .spark.sql override if there is one, else transpiled."""
    text = override_text(name)
    return parse_override(name, text) if text is not None else transpile(name, load(name).text)
