"""A tenant's SQL, parsed: the allow-list, the refusals and the rewrite into the tenant."""

from __future__ import annotations

import re

import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlglot import exp

from core.sql_guard import SqlRefused, one_statement, tenant_sql

DB = "memstream"
TABLES = ("memories", "memory_changelog", "memory_settings")
MINE = 'SELECT * FROM "memstream"."{t}"{final} WHERE tenant_id = \'t1\''


def guard(query: str) -> str:
    return tenant_sql(query, tenant="t1", database=DB, tables=TABLES)


def read_tables(sql: str) -> list[tuple[str, str]]:
    """(database, table) of every table the SQL names."""
    tree = sqlglot.parse_one(sql, dialect="clickhouse")
    return [(t.db, t.name) for t in tree.find_all(exp.Table)]


def assert_in_tenant(sql: str) -> None:
    """Every real table of ``sql`` is read through ``WHERE tenant_id = 't1'``."""
    tree = sqlglot.parse_one(sql, dialect="clickhouse")
    for table in tree.find_all(exp.Table):
        if table.name.startswith("_tenant_cte_"):
            continue
        assert (table.db, table.name in TABLES) == (DB, True), sql
        select = table.find_ancestor(exp.Select)
        final = " FINAL" if isinstance(table.parent, exp.Final) else ""
        assert select.sql(dialect="clickhouse") == MINE.format(t=table.name, final=final), sql


@pytest.mark.parametrize(
    ("query", "refused"),
    [
        # the escapes: a table function behind a comment, system tables quoted
        ("SELECT tenant_id, count() FROM/**/merge('memstream', '^memories$') GROUP BY 1", "merge"),
        ("SELECT * FROM merge/**/('memstream', '^memory_changelog$')", "merge"),
        ("SELECT * FROM -- c\nmerge('memstream', '^data_keys$')", "merge"),
        ("SELECT * FROM `system`.tables", "system.tables"),
        ('SELECT * FROM "system"."tables"', "system.tables"),
        ("SELECT * FROM SYSTEM.TABLES", "SYSTEM.TABLES"),
        ("SELECT * FROM information_schema.tables", "information_schema.tables"),
        ("SELECT 1 UNION ALL SELECT count() FROM system.tables", "system.tables"),
        # tables off the allow-list, or of another database
        ("SELECT * FROM data_keys", "data_keys"),
        ("SELECT * FROM memstream.data_keys", "data_keys"),
        ("SELECT * FROM memstream.store_meta", "store_meta"),
        ("SELECT * FROM default.memories", "default.memories"),
        ("SELECT * FROM other.memstream.memories", "other.memstream.memories"),
        ("SELECT * FROM MEMORIES", "MEMORIES"),
        ("SELECT * FROM memories WHERE user_id IN (SELECT user_id FROM data_keys)", "data_keys"),
        ("SELECT * FROM memories AS m JOIN system.one AS o ON 1", "system.one"),
        ("SELECT (SELECT count() FROM system.tables) FROM memories", "system.tables"),
        # a CTE named like an allowed table does not hide what it reads
        ("WITH memories AS (SELECT * FROM system.tables) SELECT * FROM memories", "system"),
        ("SELECT * FROM (WITH data_keys AS (SELECT 1) SELECT 1) AS x, data_keys", "data_keys"),
        ("WITH RECURSIVE m AS (SELECT 1) SELECT * FROM m", "RECURSIVE"),
        # table functions, and functions that read a table, a dictionary or a file
        ("SELECT * FROM numbers(10)", "numbers"),
        ("SELECT * FROM remote('127.0.0.1', system.tables)", "remote"),
        ("SELECT * FROM view(SELECT * FROM memories)", "view"),
        ("SELECT * FROM generate_series(1, 3)", "GENERATE_SERIES"),
        ("SELECT * FROM values('x UInt8', 1)", "VALUES"),
        ("SELECT dictGet('memstream.d', 'a', toUInt64(1))", "dictGet"),
        ("SELECT joinGet('memstream.data_keys', 'wrapped', 1)", "joinGet"),
        ("SELECT hasColumnInTable('memstream', 'data_keys', 'wrapped')", "hasColumnInTable"),
        ("SELECT file('/etc/passwd')", "file"),
        ("SELECT * FROM memories WHERE globalIn(user_id, data_keys)", "globalIn"),
        # IN <table> reads the table in ClickHouse
        ("SELECT * FROM memories WHERE user_id IN data_keys", "IN data_keys"),
        ("SELECT * FROM memories WHERE user_id GLOBAL NOT IN memstream.data_keys", "IN"),
        ("SELECT * FROM memories WHERE user_id IN (memstream.data_keys)", "IN"),
        ("SELECT * FROM memories WHERE user_id IN ((memstream.data_keys))", "IN"),
        ("SELECT * FROM memories WHERE user_id IN [memstream.data_keys]", "IN"),
        ("SELECT * FROM memories WHERE (user_id NOT IN `memstream`.`data_keys`)", "IN"),
        # clauses that would lift the filter or change the output
        ("SELECT * FROM memories SETTINGS additional_table_filters = {}", "SETTINGS"),
        (
            "SELECT * FROM memories UNION ALL SELECT * FROM memories SETTINGS readonly = 0",
            "SETTINGS",
        ),
        ("SELECT * FROM (SELECT * FROM memories SETTINGS max_threads = 1)", "SETTINGS"),
        ("SELECT * FROM memories FORMAT JSON", "FORMAT"),
        ("SELECT * FROM memories INTO OUTFILE '/tmp/x'", "cannot parse"),
        # not one SELECT
        ("SELECT 1; SELECT * FROM system.tables", "one statement"),
        ("INSERT INTO memories (memory_id) VALUES ('x')", "INSERT"),
        ("SHOW TABLES", "SHOW"),
        ("DESCRIBE memories", "DESCRIBE"),
        ("SET readonly = 0", "SET"),
        ("EXPLAIN SELECT * FROM system.tables", "EXPLAIN"),
        ("DROP TABLE memories", "DROP"),
    ],
)
def test_a_query_that_reads_around_the_tenant_is_refused_naming_what(query, refused):
    with pytest.raises(SqlRefused) as err:
        guard(query)
    assert refused.lower() in str(err.value).lower(), str(err.value)


def test_the_allow_list_reads_the_three_user_tables_unqualified_or_in_the_database():
    for table in TABLES:
        for name in (table, f"{DB}.{table}", f"`{DB}`.`{table}`", f'"{DB}"."{table}"'):
            sql = guard(f"SELECT count() FROM {name}")
            assert read_tables(sql) == [(DB, table)], sql
            assert_in_tenant(sql)


@pytest.mark.parametrize(
    "query",
    [
        "SELECT tenant_id, count() FROM memories GROUP BY tenant_id",
        "SELECT m.memory_id, c.op_type FROM memstream.memories AS m "
        "JOIN memory_changelog c ON m.memory_id = c.memory_id",
        "SELECT * FROM memories WHERE user_id IN (SELECT user_id FROM memory_settings)",
        "SELECT * FROM memories, memory_changelog",
        "SELECT count() FROM (SELECT * FROM memories) AS sub",
        "SELECT memory_id FROM memories UNION ALL SELECT memory_id FROM memory_changelog",
        "WITH data_keys AS (SELECT * FROM memories) SELECT * FROM data_keys",
        "WITH a AS (SELECT * FROM memories), b AS (SELECT * FROM a) SELECT * FROM b",
        "WITH (SELECT count() FROM memories) AS n SELECT n",
        "SELECT memory_id FROM memories AS m FINAL WHERE user_id = 7",
        "SELECT * FROM memories ARRAY JOIN custom_tags AS tag",
        "SELECT /* x */ * FROM -- c\n memories",
    ],
)
def test_every_table_of_an_allowed_query_is_read_through_the_tenant(query):
    assert_in_tenant(guard(query))


def test_the_rewrite_keeps_the_alias_the_query_used():
    assert guard("SELECT m.memory_id FROM memories AS m") == (
        "SELECT m.memory_id FROM (" + MINE.format(t="memories", final="") + ") AS m"
    )
    assert guard("SELECT memories.memory_id FROM memstream.memories FINAL") == (
        "SELECT memories.memory_id FROM ("
        + MINE.format(t="memories", final=" FINAL")
        + ") AS memories"
    )
    # a fully qualified column follows its table into the subquery
    assert guard("SELECT memstream.memories.memory_id FROM memstream.memories").startswith(
        "SELECT memories.memory_id FROM ("
    )


def test_a_cte_gets_a_fresh_name_so_no_spelling_of_it_reaches_a_real_table():
    sql = guard("WITH data_keys AS (SELECT user_id FROM memories) SELECT * FROM data_keys")
    names = re.findall(r"_tenant_cte_[0-9a-f]{12}_0", sql)
    assert len(names) == 2 and names[0] == names[1], sql
    assert "AS data_keys" in sql and "FROM data_keys" not in sql
    other = guard("WITH data_keys AS (SELECT user_id FROM memories) SELECT * FROM data_keys")
    assert re.findall(r"_tenant_cte_\w+", other) != names  # unguessable per query


def test_comments_do_not_reach_the_server():
    sql = guard("SELECT 1 -- x */ FROM system.tables\n")
    assert sql == "SELECT 1"
    sql = guard("SELECT /* memstream.data_keys */ memory_id FROM memories")
    assert "data_keys" not in sql and "/*" not in sql


def test_the_tenant_is_a_quoted_literal():
    sql = tenant_sql("SELECT * FROM memories", tenant="t'1", database=DB, tables=TABLES)
    assert "tenant_id = 't\\'1'" in sql or "tenant_id = 't''1'" in sql, sql


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("SELECT 1", "SELECT 1"),
        ("SELECT 1;", "SELECT 1"),
        ("SELECT 1 ; ;", "SELECT 1 "),
        ("SELECT ';' AS s", "SELECT ';' AS s"),
        ("SELECT 1 -- a; comment", "SELECT 1 -- a; comment"),
        ("SELECT * FROM system.tables", "SELECT * FROM system.tables"),  # local mode
    ],
)
def test_one_statement_counts_tokens_not_characters(query, expected):
    assert one_statement(query) == expected


@pytest.mark.parametrize("query", ["SELECT 1; SELECT 2", "SELECT 1; DROP TABLE memories"])
def test_one_statement_refuses_a_second_statement(query):
    with pytest.raises(SqlRefused, match="one statement"):
        one_statement(query)


FRAGMENTS = (
    "SELECT", "*", "count()", "tenant_id", "memory_id", "FROM", "memories", "memory_changelog",
    "data_keys", "memstream.", "system.tables", "`system`.", "\"system\".", "merge('memstream', 'm')",
    "numbers(3)", "/**/", "-- c\n", "(", ")", ",", "WITH", "AS", "m", "JOIN", "ON", "1", "=",
    "IN", "UNION ALL", "FINAL", "WHERE", "SETTINGS", "readonly = 0", ";", "ARRAY JOIN", "x",
)  # fmt: skip


@settings(max_examples=1000, deadline=None)
@given(
    st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=16),
    st.sampled_from(["", "SELECT * FROM memories ", "WITH m AS (SELECT * FROM memories) "]),
)
def test_any_text_is_refused_or_reads_the_tenant_only(words, prefix):
    query = prefix + " ".join(words)
    try:
        sql = guard(query)
    except SqlRefused:
        return
    assert_in_tenant(sql)


@pytest.mark.parametrize(
    ("call", "named"),
    [
        ("hostName()", "hostName"),
        ("version()", "VERSION"),
        ("currentUser()", "currentUser"),
        ("current_user()", "CURRENT_USER"),
        ("uptime()", "uptime"),
        ("getSetting('readonly')", "getSetting"),
        ("getServerSetting('path')", "getServerSetting"),
        ("currentDatabase()", "CURRENT_DATABASE"),
        ("timezone()", "timezone"),
        ("serverUUID()", "serverUUID"),
        ("fqdn()", "fqdn"),
        ("currentQueryID()", "currentQueryID"),
        ("sleep(3)", "sleep"),
        ("throwIf(1)", "throwIf"),
        ("HOSTNAME()", "HOSTNAME"),
        ("hostNameIf(1)", "hostNameIf"),  # a combinator suffix makes no aggregate of it
        ("sum(length(hostName()))", "hostName"),  # nested
        ("anyFutureFunction(1)", "anyFutureFunction"),  # unknown: refused, not guessed
    ],
)
def test_a_function_off_the_allow_list_is_refused_naming_it(call, named):
    for query in (f"SELECT {call}", f"SELECT memory_id FROM memories WHERE {call} = 1"):
        with pytest.raises(SqlRefused, match=rf"(?i)function {named}\(\) refused"):
            guard(query)


@pytest.mark.parametrize(
    "expr",
    [
        # aggregates, with combinators and parameters
        "count()", "count(DISTINCT user_id)", "countIf(importance > 1)", "sum(importance)",
        "avg(importance)", "uniqExact(user_id)", "uniqExactIfOrNull(user_id, 1)",
        "quantile(0.9)(importance)", "quantiles(0.5, 0.9)(importance)", "groupArray(memory_id)",
        "argMax(memory_id, created_at)", "topK(3)(app_id)", "min(created_at)", "sumState(1)",
        # string
        "upper(content)", "lowerUTF8(content)", "length(content)", "substring(content, 1, 5)",
        "concat(app_id, '-', memory_id)", "app_id || 'x'", "replaceAll(content, 'a', 'b')",
        "position(content, 'tea')", "match(content, 'te+a')", "splitByChar(',', content)",
        "content LIKE '%tea%'", "trim(content)", "startsWith(content, 'I')",
        # date
        "toDate(created_at)", "toStartOfDay(created_at)", "toYYYYMM(created_at)",
        "dateDiff('day', created_at, now())", "formatDateTime(created_at, '%Y')",
        "EXTRACT(YEAR FROM created_at)", "date_trunc('day', created_at)", "today()",
        "created_at - INTERVAL 1 DAY",
        # math
        "abs(importance)", "round(importance, 2)", "floor(importance)", "sqrt(importance)",
        "log(importance)", "pow(importance, 2)", "importance % 2", "intDiv(user_id, 2)",
        "greatest(importance, 1)",
        # conditionals and conversions
        "if(importance > 1, 'hi', 'lo')", "multiIf(importance > 1, 1, 2)",
        "CASE WHEN importance > 1 THEN 1 ELSE 0 END", "coalesce(app_id, '')",
        "ifNull(app_id, '')", "nullIf(app_id, '')", "toString(user_id)", "toUInt64OrZero(app_id)",
        "CAST(user_id AS String)", "user_id::String", "toTypeName(user_id)",
        # arrays, JSON, hashes, windows
        "arrayJoin([1, 2])", "has([1, 2], 1)", "arrayMap(x -> x + 1, [1, 2])",
        "JSONExtractString(content, 'k')", "cityHash64(content)",
        "row_number() OVER (PARTITION BY user_id ORDER BY created_at)",
    ],
)  # fmt: skip
def test_ordinary_functions_are_allowed(expr):
    assert_in_tenant(guard(f"SELECT {expr} FROM memories"))


@pytest.mark.parametrize(
    "query",
    [
        "SELECT 'a secret phrase",  # the tokenizer's error quotes the query
        "SELECT 'a secret phrase' FROM FROM memories",
        "SELECT (('a secret phrase' FROM memories",
        "SELECT * FROM memories WHERE 'a secret phrase' IN hostName()",
        "SELECT hostName('a secret phrase') FROM memories",
        "SELECT * FROM system.tables WHERE name = 'a secret phrase'",
    ],
)
def test_a_refusal_quotes_no_text_of_the_query(query):
    with pytest.raises(SqlRefused) as err:
        guard(query)
    assert "secret" not in str(err.value), str(err.value)
