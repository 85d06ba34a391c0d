"""A tenant's SQL: parsed, checked against an allow-list, and rewritten into its tenant.

``tenant_sql(query, tenant=…, database=…, tables=…)`` parses ``query`` with sqlglot's
ClickHouse dialect and answers the SQL the server should run in its place, or raises
``SqlRefused`` naming what it refused. The query must be one SELECT (UNION / INTERSECT /
EXCEPT of SELECTs and CTEs are fine); every table it names, in any subquery, CTE, join
or ``IN (SELECT …)``, must be one of ``tables``, unqualified or qualified with
``database``. Table functions (``merge(…)``, ``remote(…)``, ``numbers(…)``, …), any other
table (``system.*``, ``information_schema.*``, ``data_keys``), ``IN <table>``, every
function off the allow-list of ``core.sql_functions`` (so ``dictGet*``, ``file``,
``hostName``, ``version``, ``getSetting`` …), ``SETTINGS``, ``FORMAT``, ``INTO OUTFILE``
and every other statement are refused. A refusal names what it refused (a table, a
function, a clause), never the query's text.

Then each table reference becomes a subquery of that tenant's rows,
``(SELECT * FROM db.t [FINAL] WHERE tenant_id = '<tenant>') AS <its alias or name>``,
and each CTE gets a fresh, unguessable name (so a CTE reference that ClickHouse resolved
otherwise than sqlglot would name no table at all). The result is generated without
comments and parsed and checked once more: every table it reads is a tenant subquery.

``one_statement(query)`` (no tenant: local mode) only refuses more than one statement,
by the tokens (a ``;`` inside a string or a comment does not count).
"""

from __future__ import annotations

import logging
import re
import secrets

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, SqlglotError
from sqlglot.tokens import TokenType

from core import sql_functions

DIALECT = "clickhouse"
# sqlglot warns with the query's text when it falls back to a Command (SHOW, EXPLAIN):
# that statement is refused here, and the text (it may hold content) stays out of the logs.
logging.getLogger("sqlglot").setLevel(logging.ERROR)
# The head of a function call as the ClickHouse dialect writes it: the name the server reads.
_CALL_HEAD = re.compile(r"^\s*`?([A-Za-z_][A-Za-z0-9_]*)`?\s*\(")
# Functions sqlglot writes as syntax rather than a call (CASE, AND, [a, b]); their
# operands are checked like any other node.
_SYNTAX_FUNCS = (exp.Case, exp.If, exp.Connector, exp.Not, exp.Array)
_TABLE_ARGS = frozenset({"this", "db", "catalog", "alias"})  # a plain table reference
_QUERY_REFUSED = {"into": "INTO", "settings": "SETTINGS", "format": "FORMAT", "laterals": "LATERAL"}


class SqlRefused(ValueError):
    """The query is not one a tenant may run; the message names what was refused."""


def one_statement(query: str) -> str:
    """``query`` without its trailing ``;``; more than one statement is refused."""
    try:
        tokens = sqlglot.tokenize(query, dialect=DIALECT)
    except SqlglotError as exc:
        raise SqlRefused(f"cannot read the query: {_first_line(exc)}") from None
    semis = [i for i, t in enumerate(tokens) if t.token_type == TokenType.SEMICOLON]
    if not semis:
        return query
    if any(t.token_type != TokenType.SEMICOLON for t in tokens[semis[0] :]):
        raise SqlRefused("one statement at a time (';' refused)")
    return query[: tokens[semis[0]].start]


def tenant_sql(query: str, *, tenant: str, database: str, tables: tuple[str, ...]) -> str:
    """The SQL that answers ``query`` from ``tenant``'s rows of ``tables`` only."""
    allowed = frozenset(tables)
    tree = _parse_one(query)
    _check(tree, database, allowed)
    fresh = _rename_ctes(tree)
    _wrap_tables(tree, tenant, database, allowed, fresh)
    sql = tree.sql(dialect=DIALECT, comments=False)
    _verify(sql, tenant, database, allowed, frozenset(fresh.values()))
    return sql


def _parse_one(query: str) -> exp.Query:
    try:
        statements = [s for s in sqlglot.parse(query, dialect=DIALECT) if s is not None]
    except SqlglotError as exc:
        msg = f"cannot parse the query as one ClickHouse SELECT: {_first_line(exc)}"
        raise SqlRefused(msg) from None
    if len(statements) != 1:
        raise SqlRefused(f"one statement at a time ({len(statements)} given)")
    tree = statements[0]
    if not isinstance(tree, exp.Query):
        raise SqlRefused(f"only SELECT is allowed ({_head(tree)} refused)")
    return tree


def _check(tree: exp.Expr, database: str, allowed: frozenset[str]) -> None:
    """Refuse every node that could read around the tenant (see the module docstring)."""
    for node in tree.walk():
        if isinstance(node, exp.Table):
            _check_table(node, database, allowed)
        elif isinstance(node, exp.From | exp.Join):
            _check_from_item(node)
        elif isinstance(node, exp.Func):
            _check_function(node)
        elif isinstance(node, exp.In):
            _check_in(node)
        elif isinstance(node, exp.With) and node.args.get("recursive"):
            raise SqlRefused("WITH RECURSIVE refused")
        elif isinstance(node, exp.Command | exp.Lateral):
            raise SqlRefused(f"{_head(node)} refused")
        if isinstance(node, exp.Query):
            for arg, word in _QUERY_REFUSED.items():
                if node.args.get(arg):
                    raise SqlRefused(f"{word} refused in a tenant's query")
        if isinstance(node, exp.With):
            names = [c.alias for c in node.expressions if not c.args.get("scalar")]
            if len(names) != len(set(names)):
                raise SqlRefused("a WITH clause names one CTE twice")


def _check_function(node: exp.Func) -> None:
    """Only the allow-listed functions (``core.sql_functions``), by the name ClickHouse
    reads: sqlglot may write a function under another name (``version()`` → ``VERSION()``)."""
    if isinstance(node, exp.Anonymous):
        name: str | None = node.name
    else:
        head = _CALL_HEAD.match(node.sql(dialect=DIALECT))
        name = head.group(1) if head else None
        if name is None and isinstance(node, _SYNTAX_FUNCS):
            return
    if name is None or not sql_functions.allowed(name):
        shown = name or node.sql_name()
        raise SqlRefused(
            f"function {shown}() refused: a tenant's SQL may call aggregate, window, "
            "conditional, math, string, date, conversion, array, JSON and hash functions only"
        )


def _check_table(table: exp.Table, database: str, allowed: frozenset[str]) -> None:
    if not isinstance(table.this, exp.Identifier):
        raise SqlRefused(f"table function {_head(table.this)} refused")
    extra = sorted(k for k, v in table.args.items() if v and k not in _TABLE_ARGS)
    if extra:
        raise SqlRefused(f"table {table.name}: {', '.join(extra)} refused")
    if table.catalog or (table.db and table.db != database):
        where = ".".join(p for p in (table.catalog, table.db, table.name) if p)
        raise SqlRefused(f"table {where} refused: {_reads(database, allowed)}")
    if table.name not in allowed and not (not table.db and _cte_of(table) is not None):
        raise SqlRefused(f"table {table.name} refused: {_reads(database, allowed)}")


def _check_from_item(node: exp.From | exp.Join) -> None:
    item = node.this
    if isinstance(node, exp.Join) and "ARRAY" in str(node.args.get("kind") or "").upper():
        if isinstance(item, exp.Table | exp.Subquery):
            raise SqlRefused("ARRAY JOIN of a table refused")
        return  # an expression: its functions and tables are checked like any other
    if isinstance(item, exp.Final):
        item = item.this
        if not isinstance(item, exp.Table):
            raise SqlRefused("FINAL applies to a table only")
    if not isinstance(item, exp.Table | exp.Subquery):
        raise SqlRefused(f"{_head(item)} refused in FROM/JOIN: tables and subqueries only")


def _check_in(node: exp.In) -> None:
    """``x IN t``, ``x IN (t)`` and ``x IN ((t))`` read table ``t`` in ClickHouse (and sqlglot
    writes ``x IN [t]`` as ``x IN (t)``)."""
    field = node.args.get("field")
    items = node.expressions
    named = field if field is not None else (items[0] if len(items) == 1 else None)
    while isinstance(named, exp.Paren):  # `x IN ((t))` reads t too
        named = named.this
    if isinstance(named, exp.Column | exp.Identifier | exp.Dot | exp.Table):
        raise SqlRefused(f"IN {named.sql(dialect=DIALECT)} refused: use IN (SELECT …)")


def _cte_of(table: exp.Table) -> exp.CTE | None:
    """The CTE an unqualified table name refers to, by sqlglot's scoping, or None."""
    child: exp.Expr = table
    node: exp.Expr | None = table.parent
    inner: exp.Expr | None = None
    while node is not None:
        with_ = node.args.get("with_") if isinstance(node, exp.Query) else None
        if isinstance(with_, exp.With):
            ctes: list[exp.CTE] = [c for c in with_.expressions if not c.args.get("scalar")]
            if child is with_:  # inside a CTE of this WITH: the ones before it
                ctes = ctes[: next((i for i, c in enumerate(ctes) if c is inner), len(ctes))]
            for cte in reversed(ctes):
                if cte.alias == table.name:
                    return cte
        inner = child
        child, node = node, node.parent
    return None


def _rename_ctes(tree: exp.Expr) -> dict[int, str]:
    """Table references to a CTE name that CTE's fresh name (keeping the name as alias);
    answers {id(cte): fresh name}."""
    token = secrets.token_hex(6)
    fresh: dict[int, str] = {}
    refs = [(t, _cte_of(t)) for t in tree.find_all(exp.Table) if not t.db]
    for cte in tree.find_all(exp.CTE):
        if not cte.args.get("scalar"):
            fresh[id(cte)] = f"_tenant_cte_{token}_{len(fresh)}"
    for table, named in refs:
        if named is not None:
            alias = table.alias or table.name
            table.set("this", exp.to_identifier(fresh[id(named)]))
            table.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
    for cte in tree.find_all(exp.CTE):
        if id(cte) in fresh:  # `WITH k(a, b) AS (…)` keeps its column names
            cte.args["alias"].set("this", exp.to_identifier(fresh[id(cte)]))
    return fresh


def _wrap_tables(
    tree: exp.Expr, tenant: str, db: str, allowed: frozenset[str], fresh: dict[int, str]
) -> None:
    names = set(fresh.values())
    for table in list(tree.find_all(exp.Table)):
        if not table.db and table.name in names:
            continue
        parent = table.parent
        final = isinstance(parent, exp.Final)
        alias = table.args.get("alias") or exp.TableAlias(this=exp.to_identifier(table.name))
        sub = exp.Subquery(this=_tenant_select(tenant, db, table.name, final), alias=alias)
        (parent if isinstance(parent, exp.Final) else table).replace(sub)
    for col in tree.find_all(exp.Column):  # db.memories.memory_id → memories.memory_id
        if col.args.get("db") and col.text("db") == db and col.table in allowed:
            col.set("db", None)


def _tenant_select(tenant: str, db: str, name: str, final: bool) -> exp.Select:
    table: exp.Expr = exp.table_(name, db=db, quoted=True)
    if final:
        table = exp.Final(this=table)
    cond = exp.EQ(this=exp.column("tenant_id"), expression=exp.Literal.string(tenant))
    return exp.Select(expressions=[exp.Star()], from_=exp.From(this=table)).where(cond)


def _verify(sql: str, tenant: str, db: str, allowed: frozenset[str], ctes: frozenset[str]) -> None:
    """The generated SQL, parsed again: checked, and every table a tenant subquery."""
    tree = _parse_one(sql)
    _check(tree, db, allowed | ctes)
    for table in tree.find_all(exp.Table):
        if not table.db and table.name in ctes:
            continue
        select = table.parent.parent if isinstance(table.parent, exp.Final) else table.parent
        select = select.parent if isinstance(select, exp.From) else None
        want = _tenant_select(tenant, db, table.name, isinstance(table.parent, exp.Final))
        if not (
            isinstance(select, exp.Select)
            and table.db == db
            and table.name in allowed
            and isinstance(select.parent, exp.Subquery)
            and select.sql(dialect=DIALECT) == want.sql(dialect=DIALECT)
        ):
            raise SqlRefused(f"the rewritten query reads {table.name} unfiltered")


def _head(node: exp.Expr | None) -> str:
    if node is None:
        return "nothing"
    if isinstance(node, exp.Anonymous):
        return f"{node.name}(…)"
    if isinstance(node, exp.Func):
        return f"{node.sql_name()}(…)"
    if isinstance(node, exp.Command):
        return str(node.this).upper()
    return node.key.upper()


def _reads(database: str, allowed: frozenset[str]) -> str:
    return f"a tenant's SQL reads {', '.join(sorted(allowed))} (of {database}) only"


def _first_line(exc: SqlglotError) -> str:
    """Where and why sqlglot could not read the query, without the query's text (its
    messages quote the text around the error, and a tokenizer error quotes the query)."""
    if isinstance(exc, ParseError) and exc.errors:
        err = exc.errors[0]
        where = f"line {err.get('line')}, column {err.get('col')}"
        why = str(err.get("description") or "")
        quoting = any(mark in why for mark in ("'", '"', "`", "Token", "got"))
        return where if quoting or not why else f"{why} ({where})"
    return "an unterminated string, comment or identifier"
