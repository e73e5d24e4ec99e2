"""Helpers for the schema catalog tests."""

from __future__ import annotations

from logtide.cql import parse
from logtide.schema.catalog import Catalog

NOW = 1_700_000_000_000_000


def run(catalog: Catalog, *statements: str, keyspace: str | None = "ks") -> Catalog:
    """Apply CQL DDL statements in order."""
    for text in statements:
        catalog, _ = catalog.apply(parse(text).statement, keyspace, NOW)
    return catalog


def apply(catalog: Catalog, text: str, keyspace: str | None = "ks"):
    """Apply one statement: (catalog, schema change)."""
    return catalog.apply(parse(text).statement, keyspace, NOW)


def keyspace_catalog() -> Catalog:
    """A catalog with keyspace ks (SimpleStrategy, RF 1)."""
    return run(Catalog.empty(), "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
