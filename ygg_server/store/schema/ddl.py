"""Tables, columns and indexes described once, with portable types, and rendered as each dialect's SQL."""

from __future__ import annotations

from dataclasses import dataclass

SQLITE, POSTGRES = "sqlite", "postgres"
DIALECTS = (SQLITE, POSTGRES)


@dataclass(frozen=True)
class Type:
    sqlite: str
    postgres: str


TEXT = Type("TEXT", "TEXT")  # ids, names, JSON
INT = Type("INTEGER", "INTEGER")  # a 0/1 flag, a count, a version
SMALL = Type("INTEGER", "SMALLINT")
BIG = Type("INTEGER", "BIGINT")  # microseconds since the epoch, credits, the key of a numbered row
BLOB = Type("BLOB", "BYTEA")  # encoded states, message bodies, replies
SERIAL = Type("INTEGER PRIMARY KEY AUTOINCREMENT", "BIGSERIAL PRIMARY KEY")  # a key the store numbers, growing


@dataclass(frozen=True)
class Column:
    name: str
    type: Type
    null: bool = False  # NULL allowed
    key: bool = False  # the table's primary key, alone
    unique: bool = False
    default: str | None = None  # an SQL literal both dialects read
    only: str | None = None  # the one dialect that has it

    def sql(self, dialect: str) -> str:
        out = [self.name, getattr(self.type, dialect)]
        if self.key:
            out.append("PRIMARY KEY")
        elif not self.null and self.type is not SERIAL:
            out.append("NOT NULL")
        if self.unique:
            out.append("UNIQUE")
        if self.default is not None:
            out.append(f"DEFAULT {self.default}")
        return " ".join(out)


def text(name: str, **kw) -> Column:
    return Column(name, TEXT, **kw)


def integer(name: str, **kw) -> Column:
    return Column(name, INT, **kw)


def small(name: str, **kw) -> Column:
    return Column(name, SMALL, **kw)


def big(name: str, **kw) -> Column:
    return Column(name, BIG, **kw)


def blob(name: str, **kw) -> Column:
    return Column(name, BLOB, **kw)


def serial(name: str) -> Column:
    return Column(name, SERIAL)


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    key: tuple[str, ...] = ()  # a primary key of several columns
    unique: tuple[str, ...] = ()  # one UNIQUE constraint over these columns
    only: str | None = None

    def __init__(self, name: str, *columns: Column, key=(), unique=(), only=None):
        for k, v in (("name", name), ("columns", columns), ("key", tuple(key)), ("unique", tuple(unique)),
                     ("only", only)):
            object.__setattr__(self, k, v)

    def sql(self, dialect: str) -> str:
        parts = [c.sql(dialect) for c in self.columns if c.only in (None, dialect)]
        if self.key:
            parts.append(f"PRIMARY KEY ({', '.join(self.key)})")
        if self.unique:
            parts.append(f"UNIQUE ({', '.join(self.unique)})")
        return f"CREATE TABLE {self.name} ({', '.join(parts)})"

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)


@dataclass(frozen=True)
class Index:
    name: str
    table: str
    on: str  # the indexed columns, or an expression, as SQL
    where: str | None = None  # a partial index's rows
    unique: bool = False
    using: str | None = None  # PostgreSQL's access method (GIN)
    only: str | None = None

    def sql(self, dialect: str) -> str:
        using = f" USING {self.using}" if self.using else ""
        where = f" WHERE {self.where}" if self.where else ""
        return f"CREATE {'UNIQUE ' if self.unique else ''}INDEX {self.name} ON {self.table}{using} ({self.on}){where}"


def add_column(table: Table, name: str, dialect: str) -> str:
    """The ALTER TABLE that gives an existing `table` its column `name` (for a migration step)."""
    return f"ALTER TABLE {table.name} ADD COLUMN {table.column(name).sql(dialect)}"


def has(thing, dialect: str) -> bool:
    return thing.only in (None, dialect)
