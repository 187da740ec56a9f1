"""The catalog's statements in PostgreSQL's dialect.

The catalog's named queries are written once, in the SQL that SQLite runs.
Most of it is standard; `translate()` rewrites the few SQLite forms they use
into PostgreSQL's, once per statement (cached):

* ``?`` placeholders become ``%s`` (and a literal ``%`` becomes ``%%``);
* ``INSERT OR IGNORE`` becomes ``ON CONFLICT DO NOTHING``, and
  ``INSERT OR REPLACE`` an upsert on the table's key (`REPLACE_KEYS`);
* the two-argument scalar ``max(a, b)``/``min(a, b)`` become ``GREATEST``/``LEAST``;
* ``group_concat(x, sep)`` becomes ``string_agg(CAST(x AS TEXT), sep)``, ``char(31)`` ``chr(31)``;
* ``json_each(?) c`` (an id list given as JSON) becomes a set of ``bigint`` rows named ``c(value)``;
* ``sum`` of a comparison counts with ``CASE``, and the filter index's JSONB values compare with JSON;
* SQLite's ``sqlite_sequence`` row of the index queue becomes the queue's newest position;
* ``LIMIT -1`` (no limit, to SQLite) becomes ``LIMIT NULL``, and ``CROSS JOIN ... ON`` a ``JOIN``.

Statements that differ in more than spelling (the schema, the keyword index,
the filter index's typed values) are written per dialect where they live.

    >>> translate("INSERT OR IGNORE INTO versions VALUES (?, ?)")
    'INSERT INTO versions VALUES (%s, %s) ON CONFLICT DO NOTHING'
    >>> translate("UPDATE items SET last_accessed_at = max(last_accessed_at, ?) WHERE id = ?")
    'UPDATE items SET last_accessed_at = GREATEST(last_accessed_at, %s) WHERE id = %s'
    >>> translate("SELECT i.id FROM t f CROSS JOIN items i ON i.id = f.item_id LIMIT ?")
    'SELECT i.id FROM t f JOIN items i ON i.id = f.item_id LIMIT NULLIF(%s, -1)'
"""

from __future__ import annotations

import functools
import re

__all__ = ["translate", "REPLACE_KEYS", "dialect_of", "POSTGRESQL", "SQLITE"]

POSTGRESQL = "postgresql"
SQLITE = "sqlite"


def dialect_of(conn: object) -> str:
    """``"postgresql"`` for the PostgreSQL catalog's connection, ``"sqlite"`` for a ``sqlite3.Connection``.

    Example:
        >>> import sqlite3
        >>> dialect_of(sqlite3.connect(":memory:"))
        'sqlite'
    """
    return POSTGRESQL if getattr(conn, "dialect", None) == POSTGRESQL else SQLITE


#: The key an ``INSERT OR REPLACE`` into each table replaces on.
REPLACE_KEYS: dict[str, tuple[str, ...]] = {
    "ingested_files": ("namespace", "sha256"),
    "item_status": ("uid",),
    "meta": ("key",),
}

_SCALAR = re.compile(r"\b(max|min)\(([^(),]+),([^(),]+)\)", re.IGNORECASE)
_GROUP_CONCAT = re.compile(r"\bgroup_concat\(([^(),]+),", re.IGNORECASE)
_JSON_EACH = re.compile(r"json_each\(\?\)\s+(\w+)")
_SEQUENCE = "(SELECT seq FROM sqlite_sequence WHERE name = 'index_queue')"
_OR_IGNORE = re.compile(r"^\s*INSERT OR IGNORE INTO", re.IGNORECASE)
_OR_REPLACE = re.compile(r"^\s*INSERT OR REPLACE INTO\s+(\w+)\s*\(([^)]*)\)", re.IGNORECASE)
_BOOL_SUM = re.compile(r"\bsum\(([^()]*?(?:=|>|<)[^()]*?)\)", re.IGNORECASE)
_VAL_LITERAL = re.compile(r"\b((?:\w+\.)?val) = (\d+)\b")
_RETURNING = re.compile(r"\sRETURNING\s", re.IGNORECASE)
# SQLite reads a negative LIMIT as none (the catalog passes -1 for "all"); PostgreSQL refuses it, and takes NULL.
_LIMIT = re.compile(r"\bLIMIT \?")
# SQLite's "CROSS JOIN t x ON ..." fixes the join order; PostgreSQL's CROSS JOIN takes no ON.
_CROSS_JOIN_ON = re.compile(r"\bCROSS JOIN(\s+\w+\s+\w+\s+ON\b)")


def _append_conflict(sql: str, clause: str) -> str:
    m = _RETURNING.search(sql)
    if m is None:
        return f"{sql.rstrip()} {clause}"
    return f"{sql[: m.start()].rstrip()} {clause}{sql[m.start() :]}"


@functools.lru_cache(maxsize=2048)
def translate(sql: str) -> str:
    """``sql`` (the catalog's SQLite dialect) in PostgreSQL's, with psycopg's ``%s`` placeholders."""
    out = sql.replace("%", "%%")
    out = out.replace(_SEQUENCE, "(SELECT max(seq) FROM index_queue)")
    out = out.replace(_SEQUENCE[1:-1], "SELECT max(seq) FROM index_queue HAVING max(seq) IS NOT NULL")
    out = _JSON_EACH.sub(
        lambda m: f"(SELECT CAST(j AS BIGINT) AS value FROM jsonb_array_elements_text(CAST(? AS jsonb)) j) {m[1]}",
        out,
    )
    if _OR_IGNORE.match(out):
        out = _append_conflict(_OR_IGNORE.sub("INSERT INTO", out, count=1), "ON CONFLICT DO NOTHING")
    m = _OR_REPLACE.match(out)
    if m is not None:
        table, cols = m[1], [c.strip() for c in m[2].split(",")]
        key = REPLACE_KEYS[table]
        sets = ", ".join(f"{c} = excluded.{c}" for c in cols if c not in key)
        out = _append_conflict(
            out.replace("INSERT OR REPLACE INTO", "INSERT INTO", 1),
            f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET {sets}",
        )
    out = _SCALAR.sub(lambda m: f"{'GREATEST' if m[1].lower() == 'max' else 'LEAST'}({m[2]},{m[3]})", out)
    out = _GROUP_CONCAT.sub(lambda m: f"string_agg(CAST({m[1]} AS TEXT),", out)
    out = out.replace("char(31)", "chr(31)")
    out = _BOOL_SUM.sub(lambda m: f"sum(CASE WHEN {m[1]} THEN 1 ELSE 0 END)", out)
    # The filter index keeps values as JSONB: literal numbers compare as JSON numbers, and a
    # union with text columns reads the JSON string's text.
    out = _VAL_LITERAL.sub(lambda m: f"{m[1]} = CAST('{m[2]}' AS jsonb)", out)
    out = out.replace("UNION SELECT val FROM fields", "UNION SELECT val #>> '{}' FROM fields")
    out = out.replace("length(CAST(i.value AS BLOB))", "octet_length(i.value)")
    out = out.replace("CAST(created_at / 86400 AS INTEGER)", "CAST(floor(created_at / 86400) AS BIGINT)")
    out = _CROSS_JOIN_ON.sub(r"JOIN\1", out)
    out = _LIMIT.sub("LIMIT NULLIF(?, -1)", out)
    out = re.sub(r"\bWHERE \(1\)", "WHERE (TRUE)", out)
    return out.replace("?", "%s")
