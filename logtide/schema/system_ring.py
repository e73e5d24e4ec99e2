"""The node's token ring as ScyllaDB shows it: ``system.token_ring`` (its virtual table, ``db/virtual_tables.cc``),
``system.size_estimates`` (``db/size_estimates_virtual_reader.cc``) and the range ownership of ``DESC CLUSTER``
(``describe_statement.cc``), all from the node's tokens; and the rows of ``system_schema.scylla_tables``
(ScyllaDB's per-table extras, ``db/schema_tables.cc``).

logtide is one node: every range of the ring is owned by it, in every keyspace that is not node-local, as a
one-node ScyllaDB cluster answers with vnodes.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

Catalog = Any  # a logtide.schema.catalog.Catalog: the catalog imports system_schema, which imports this module

ALL_TABLES = "<ALL>"  # token_ring's table_name for a vnode keyspace (one ring for all its tables)


def ring_ranges(tokens: Iterable[str]) -> list[tuple[str, str]]:
    """``(start_token, end_token)`` of each range of the ring, one per token (the range that ends at it; the first
    starts at the last token, wrapping around), ordered by start token as text, as ScyllaDB's ``token_ring``."""
    ordered = sorted(tokens, key=int)
    ranges = [(ordered[i - 1], end) for i, end in enumerate(ordered)]
    return sorted(ranges)


def ring_keyspaces(catalog: "Catalog") -> list[str]:
    """The keyspaces on the ring: all but those of ``LocalStrategy`` (ScyllaDB's non-local strategy keyspaces)."""
    return sorted(ks.name for ks in catalog.all_keyspaces()
                  if not str(ks.replication.get("class", "")).endswith("LocalStrategy"))


def token_ring_rows(catalog: "Catalog", tokens: Iterable[str], endpoint: str, dc: str, rack: str
                    ) -> list[dict[str, Any]]:
    """The rows of ``system.token_ring``: per keyspace on the ring, each range with the node as its endpoint."""
    ranges = ring_ranges(tokens)
    return [{"keyspace_name": ks, "table_name": ALL_TABLES, "start_token": start, "endpoint": endpoint,
             "end_token": end, "dc": dc, "rack": rack} for ks in ring_keyspaces(catalog) for start, end in ranges]


def size_estimates_rows(catalog: "Catalog", tokens: Iterable[str],
                        estimate: Callable[[int, int, int], tuple[int, int]]) -> list[dict[str, Any]]:
    """The rows of ``system.size_estimates``: per keyspace that is not a system one, per table (views and CDC logs
    included, by name), per range the node owns (by start token as text, as ScyllaDB orders them), the estimate
    ``(partitions_count, mean_partition_size)`` that ``estimate(store_id, start, end)`` makes of the range."""
    ranges = ring_ranges(tokens)
    out = []
    for ks in (catalog.keyspaces[n] for n in sorted(catalog.keyspaces)):
        for name in sorted(ks.tables):
            store_id = ks.tables[name].store_id
            for start, end in ranges:
                count, mean = estimate(store_id, int(start), int(end))
                out.append({"keyspace_name": ks.name, "table_name": name, "range_start": start, "range_end": end,
                            "mean_partition_size": mean, "partitions_count": count})
    return out


def range_ownership(tokens: Iterable[str], endpoint: str) -> dict[str, list[str]]:
    """``DESC CLUSTER``'s ``range_ownership``: each range's end token with its endpoints, by start token."""
    return {end: [endpoint] for _, end in sorted(ring_ranges(tokens), key=lambda r: int(r[0]))}


def scylla_tables_rows(catalog: "Catalog") -> list[dict[str, Any]]:
    """The rows of ``system_schema.scylla_tables`` for the tables (and views and CDC logs) of the user keyspaces:
    the CDC options of a table that has them (``cdc``), no own partitioner (ScyllaDB's null: the default)."""
    out = []
    for ks in (catalog.keyspaces[n] for n in sorted(catalog.keyspaces)):
        for name in sorted(ks.tables):
            t = ks.tables[name]
            out.append({"keyspace_name": ks.name, "table_name": name, "version": None,
                        "cdc": dict(t.cdc) if t.cdc else None, "partitioner": None, "in_memory": False,
                        "committed_by_group0": None, "tablets": None, "storage_engine": None,
                        "large_data_guardrails_enabled": None})
    return out
