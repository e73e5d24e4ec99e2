"""The Delta sink of the lakehouse job: each micro-batch of changefeed rows becomes one MERGE into a replica table.

docs/spark.md, "The lakehouse job", follows issue 11 ("Lakehouse sinks and the job") and the Delta Lake
conventions (an application transaction per writer, the table's change data feed):

* :func:`fold` reduces one micro-batch to one row per primary key, applying the key's records in
  (partition, offset) order (a key lives in one partition): a ``delete`` forgets everything before it;
  an ``insert`` or ``update_postimage`` sets the columns it names (``_changed_columns``), so a partial
  update (UPDATES mode) keeps the other columns of the target row, and a key's first upsert after a
  delete starts from an empty row; ``update_preimage`` rows (the values before) are skipped.
* :class:`DeltaReplica` writes the folded rows with ONE MERGE by primary key through ``deltalake``
  (delta-rs): delete -> delete; otherwise update of the set columns of a matched row, or insert of the
  row with the other columns null (as CQL's UPDATE of a missing row creates it). The MERGE commit carries
  the application transaction ``(app_id, batch_id)``; a batch whose id the table already holds for that
  app id is skipped, so a micro-batch that Spark runs again after a crash changes nothing.

Nothing here imports pyspark at module level: the fold is plain pyarrow, testable without Spark.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping, Sequence

from .options import OptionError

DELETE = "_logtide_delete"  # the folded row deletes its key
SET = "_logtide_set_"  # + column index: the folded row sets that column
OLD = "_old"  # the source's struct of the non-key columns: tells key from non-key columns
FULL_IMAGE_MODES = ("NEW_IMAGE", "NEW_AND_OLD_IMAGES")


@dataclass(frozen=True)
class ReplicaShape:
    """The replica's columns, taken from the source's output schema (CHANGEFEED_SPARK_CONTRACT order).

    ``keys``: the primary-key columns (the top-level columns before ``_old`` that ``_old`` does not hold);
    ``values``: the non-key columns; ``full_images``: records carry the whole new row (NEW_IMAGE and
    NEW_AND_OLD_IMAGES), so a non-delete record without a new image means the row is gone."""

    keys: tuple[str, ...]
    values: tuple[str, ...]
    full_images: bool

    @classmethod
    def of(cls, schema: Any, mode: str) -> "ReplicaShape":
        """From a Spark StructType of the ``logtide-changefeed`` source and the feed's MODE."""
        names = [f.name for f in schema.fields]
        if OLD not in names:
            raise OptionError("the source has no _old column: not a logtide-changefeed stream")
        top = names[:names.index(OLD)]
        values = tuple(f.name for f in schema[OLD].dataType.fields if f.name in top)
        keys = tuple(n for n in top if n not in values)
        if not keys:
            raise OptionError("the source has no primary-key columns")
        check_mode(mode)
        return cls(keys, values, mode.upper() in FULL_IMAGE_MODES)

    @property
    def columns(self) -> tuple[str, ...]:
        return self.keys + self.values

    def arrow_schema(self, spark_schema: Any) -> Any:
        """The replica's Arrow schema: the source's key and value columns, Spark types as Arrow types."""
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_type

        return pa.schema([pa.field(n, to_arrow_type(spark_schema[n].dataType, timezone="UTC"))
                          for n in self.columns])


def check_mode(mode: str) -> None:
    """A replica needs the new values: KEYS_ONLY and OLD_IMAGE changefeeds are refused."""
    if mode.upper() in ("KEYS_ONLY", "OLD_IMAGE"):
        raise OptionError(f"a {mode.upper()} changefeed carries no new values: the delta sink needs MODE "
                          "NEW_IMAGE, NEW_AND_OLD_IMAGES or UPDATES (use --format parquet for a change table)")


def check_target(path: str, columns: Sequence[str]) -> bool:
    """Whether ``path`` holds the replica's Delta table already (with these ``columns``, in this order), False when
    there is none yet; a Delta table with other columns, or a directory of other files, is refused."""
    from deltalake import DeltaTable

    if DeltaTable.is_deltatable(path):
        got = [f.name for f in _arrow(DeltaTable(path).schema().to_arrow())]
        if got != list(columns):
            raise OptionError(f"--target: {path} holds a Delta table with columns {', '.join(got)}, not the "
                              f"changefeed table's {', '.join(columns)}")
        return True
    if os.path.isdir(path) and any(not n.startswith("_") for n in os.listdir(path)):
        raise OptionError(f"--target: {path} exists and is not a Delta table")
    if os.path.exists(path) and not os.path.isdir(path):
        raise OptionError(f"--target: {path} is a file, not a directory for a Delta table")
    return False


def fold(batch: Any, shape: ReplicaShape) -> Any:
    """One micro-batch (a pyarrow Table with the source's columns) as one row per key, ready to MERGE.

    The result has the key and value columns, ``_logtide_delete`` (bool) and per value column ``i``
    ``_logtide_set_<i>`` (bool): the MERGE writes value column ``i`` of a matched row only where it is
    set; unset values are null (what an insert of a new row gets)."""
    import pyarrow as pa

    n_values = len(shape.values)
    index = {c: i for i, c in enumerate(shape.values)}
    order = sorted(range(batch.num_rows), key=list(zip(batch.column("_partition").to_pylist(),
                                                      batch.column("_offset").to_pylist())).__getitem__)
    key_lists = [batch.column(k).to_pylist() for k in shape.keys]
    kinds = batch.column("_change_type").to_pylist()
    changed = batch.column("_changed_columns").to_pylist()
    # per key: [first row (for the key values), deleted, source row per value column, set per value column]
    states: dict[Any, list] = {}
    for i in order:
        if kinds[i] == "update_preimage":  # the values before an update: the postimage row that follows applies it
            continue
        key = _hashable(tuple(kl[i] for kl in key_lists))
        st = states.get(key)
        names = changed[i] or []
        gone = kinds[i] == "delete" or (shape.full_images and not names and n_values > 0)
        if gone:
            states[key] = [st[0] if st else i, True, [None] * n_values, [True] * n_values]
            continue
        if st is None:
            st = states[key] = [i, False, [None] * n_values, [False] * n_values]
        st[1] = False  # after a delete every column is set: null unless this record names it
        for name in names:
            j = index.get(name)
            if j is None:
                raise ValueError(f"_changed_columns names {name!r}, which is not a non-key column")
            st[2][j], st[3][j] = i, True
    rows = list(states.values())
    first = pa.array([r[0] for r in rows], pa.int64())
    arrays = [batch.column(k).take(first) for k in shape.keys]
    names = list(shape.keys)
    for j, c in enumerate(shape.values):
        arrays.append(batch.column(c).take(pa.array([r[2][j] for r in rows], pa.int64())))
        names.append(c)
    arrays.append(pa.array([r[1] for r in rows], pa.bool_()))
    names.append(DELETE)
    for j in range(n_values):
        arrays.append(pa.array([r[3][j] for r in rows], pa.bool_()))
        names.append(f"{SET}{j}")
    return pa.Table.from_arrays([a.combine_chunks() if hasattr(a, "combine_chunks") else a for a in arrays],
                                names=names)


def _hashable(v: Any) -> Any:
    """Key values as a dict key (frozen collections in keys come back from Arrow as lists, dicts or pairs)."""
    if isinstance(v, (list, tuple)):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _hashable(x)) for k, x in v.items()))
    return v


def sql_name(name: str) -> str:
    """A column name quoted for delta-rs (DataFusion) SQL expressions."""
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class DeltaReplica:
    """A Delta table at ``path`` kept equal to the changefeed's table by one MERGE per micro-batch."""

    path: str
    shape: ReplicaShape

    def ensure(self, schema: Any) -> None:
        """Create the table (``schema``: its Arrow schema) with its change data feed on, unless it exists
        with the same columns; a table with other columns is refused and left alone."""
        from deltalake import DeltaTable

        if check_target(self.path, [f.name for f in schema]):
            return
        DeltaTable.create(self.path, schema, configuration={"delta.enableChangeDataFeed": "true"},
                          name=os.path.basename(os.path.abspath(self.path)))

    def applied(self, app_id: str) -> int | None:
        """The last micro-batch id of ``app_id`` the table holds (None: none)."""
        from deltalake import DeltaTable

        return DeltaTable(self.path).transaction_version(app_id)

    def apply(self, batch: Any, app_id: str, batch_id: int) -> dict[str, Any] | None:
        """MERGE one micro-batch (a pyarrow Table of source rows) as application transaction
        ``(app_id, batch_id)``; returns the MERGE's metrics, or None when the table already has it."""
        from deltalake import CommitProperties, DeltaTable, Transaction

        dt = DeltaTable(self.path)
        done = dt.transaction_version(app_id)
        if done is not None and done >= batch_id:
            return None
        folded = fold(batch, self.shape)
        if folded.num_rows == 0:
            return {"num_source_rows": 0}
        folded = folded.cast(_merge_schema(_arrow(dt.schema().to_arrow()), folded.schema))
        q = sql_name
        # null-safe: the row of a partition's static columns has null clustering columns (docs/changefeeds.md)
        on = " AND ".join(f"(t.{q(k)} IS NOT DISTINCT FROM s.{q(k)})" for k in self.shape.keys)
        update = {q(c): f"CASE WHEN s.{SET}{j} THEN s.{q(c)} ELSE t.{q(c)} END"
                  for j, c in enumerate(self.shape.values)}
        insert = {q(c): f"s.{q(c)}" for c in self.shape.columns}
        commit = CommitProperties(app_transactions=[Transaction(app_id, batch_id)],
                                  custom_metadata={"logtide.batch": str(batch_id)})
        merger = dt.merge(folded, on, source_alias="s", target_alias="t", commit_properties=commit)
        merger = merger.when_matched_delete(f"s.{DELETE}")
        if update:
            merger = merger.when_matched_update(update, f"NOT s.{DELETE}")
        return merger.when_not_matched_insert(insert, f"NOT s.{DELETE}").execute()


    def overwrite(self, tables: Iterable[Any], metadata: Mapping[str, str]) -> None:
        """Replace the table's rows with ``tables`` (pyarrow Tables with the replica's columns, read one after
        another while delta-rs writes them) in ONE commit, carrying ``metadata``: the snapshot of a new replica."""
        import pyarrow as pa
        from deltalake import CommitProperties, DeltaTable, write_deltalake

        schema = _arrow(DeltaTable(self.path).schema().to_arrow())

        def batches() -> Iterator[Any]:
            for t in tables:
                yield from t.select(schema.names).cast(schema).to_batches()

        write_deltalake(self.path, pa.RecordBatchReader.from_batches(schema, batches()), mode="overwrite",
                        commit_properties=CommitProperties(custom_metadata=dict(metadata)))


def snapshot_rows(rows: Any, partition_key: Sequence[str], clustering: Sequence[str], statics: Sequence[str]) -> Any:
    """A table's rows as ``SELECT *`` gives them (a pyarrow Table) in the replica's form, where a partition's
    static columns are a row of their own (its partition key, null clustering columns, the static values), as
    the changefeed has them: the clustered rows with null static columns, and one static row per partition whose
    static columns hold a value."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not statics or not clustering or rows.num_rows == 0:
        return rows

    def nulled(t: Any, names: Iterable[str]) -> Any:
        for name in names:
            i = t.schema.get_field_index(name)
            t = t.set_column(i, t.schema.field(i), pa.nulls(t.num_rows, t.schema.field(i).type))
        return t

    clustered = nulled(rows.filter(pc.is_valid(rows.column(clustering[0]))), statics)
    has_static = [any(v) for v in zip(*(pc.is_valid(rows.column(c)).to_pylist() for c in statics))]
    keys = list(zip(*(rows.column(k).to_pylist() for k in partition_key)))
    seen: set = set()
    first = []
    for i, (key, present) in enumerate(zip(keys, has_static)):
        k = _hashable(key)
        if present and k not in seen:
            seen.add(k)
            first.append(i)
    others = [n for n in rows.column_names if n not in statics and n not in partition_key]
    static_rows = nulled(rows.take(pa.array(first, pa.int64())), others)
    return pa.concat_tables([static_rows, clustered])


def _arrow(schema: Any) -> Any:
    """A pyarrow Schema from whatever Arrow schema object delta-rs returns."""
    import pyarrow as pa

    return schema if isinstance(schema, pa.Schema) else pa.schema(schema)


def _merge_schema(table_schema: Any, folded: Any) -> Any:
    """The folded batch's schema with the table's types for the table's columns (nullability, names of
    list items and map entries as the table has them)."""
    import pyarrow as pa

    types = {f.name: f.type for f in table_schema}
    return pa.schema([pa.field(f.name, types.get(f.name, f.type)) for f in folded])


def batch_columns(shape: ReplicaShape) -> Sequence[str]:
    """The source columns a micro-batch needs for the fold."""
    return [*shape.columns, "_change_type", "_changed_columns", "_partition", "_offset"]
