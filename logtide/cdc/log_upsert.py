"""The CDC log rows of the commonest update, derived directly (spec ``000``, ``001``): clustered rows upserted with
atomic cells of one timestamp and no TTL.  ``cdc.log.Derivation.rows`` tries it first; ``cdc/upsert.py`` encodes the
same rows in one pass.
"""

from __future__ import annotations

from typing import Any

from ..mutation.model import PartitionUpdate
from . import log_schema as L
from .log_rows import INSERT, OPERATION_BYTES, POSTIMAGE, PREIMAGE, TRUE, UPDATE, LogRow
from .row_state import RowState


def upsert_timestamp(pu: PartitionUpdate) -> int | None:
    """The one timestamp of a plain upsert: clustered rows with atomic cells of one timestamp and no TTL
    (a row marker of that timestamp and no TTL allowed), no deletion, static row or collection; None for
    any other update."""
    if pu.deletion is not None or pu.range_deletions or pu.static is not None or not pu.rows:
        return None
    ts: int | None = None
    for row in pu.rows.values():
        if row.deletion is not None or row.complex:
            return None
        m = row.marker
        if m is not None:
            if m.ttl != 0 or (ts is not None and m.timestamp != ts):
                return None
            ts = m.timestamp
        elif not row.cells:
            return None
        for cell in row.cells.values():
            if (ts is not None and cell.timestamp != ts) or (cell.ttl != 0 and cell.value is not None):
                return None
            ts = cell.timestamp
    return ts


def upsert_rows(d: Any) -> list[LogRow] | None:
    """The rows of the commonest update, derived directly: clustered rows upserted with atomic cells of
    one timestamp and no TTL (no deletion, static row or collection).  Such an update is one group
    of one change that ScyllaDB does not split, so the rows are: preimages, then one delta per row
    (an insert when it has a row marker), then postimages, each kind in clustering order; exactly
    what ``Derivation.general_rows`` gives (``tests/cdc/test_log_fast_path.py``), without its
    intermediate changes and deltas.  None for any other update."""
    pu = d.pu
    ts = upsert_timestamp(pu)
    if ts is None:
        return None
    opts = d.opts
    regular = d.regular_cols
    cks = sorted(pu.rows) if len(pu.rows) > 1 else list(pu.rows)
    keys = {ck: d.key_values(pu.rows[ck].clustering) for ck in cks}  # copied for each row of a ck
    plain = not d.base.multicell_names  # no collection column: an image is the atomic values alone
    out: list[LogRow] = []
    if opts.preimage:
        full = opts.full_preimage
        for ck in cks:
            st = d.state_rows.get(ck)
            if st is None or not st.exists():
                continue
            cols = regular if full else [c for c in regular if c.name in pu.rows[ck].cells]
            vals = dict(keys[ck])
            if plain:  # Derivation.image_values of atomic columns, inline
                sv = st.values
                for col in cols:
                    v = sv.get(col.name)
                    if v is not None:
                        vals[col.name] = v
                    else:
                        vals[L.DELETED + col.name] = TRUE
            else:
                vals.update(d.image_values(st, cols, True))
            vals[L.OPERATION] = OPERATION_BYTES[PREIMAGE]
            out.append(LogRow(ts, len(out), vals))
    keys_only = opts.delta_keys_only
    for ck in cks:
        row = pu.rows[ck]
        vals = dict(keys[ck]) if opts.postimage else keys[ck]
        if not keys_only:
            for name, cell in row.cells.items():
                if cell.value is None:
                    vals[L.DELETED + name] = TRUE
                else:
                    vals[name] = cell.value
        vals[L.OPERATION] = OPERATION_BYTES[INSERT if row.marker is not None else UPDATE]
        out.append(LogRow(ts, len(out), vals))
    if opts.postimage and plain:
        for ck in cks:
            before = d.state_rows.get(ck)
            merged = dict(before.values) if before is not None else {}
            for name, cell in pu.rows[ck].cells.items():
                if cell.value is None:
                    merged.pop(name, None)
                else:
                    merged[name] = cell.value
            vals = keys[ck]
            for col in regular:
                v = merged.get(col.name)
                if v is not None:
                    vals[col.name] = v
            vals[L.OPERATION] = OPERATION_BYTES[POSTIMAGE]
            out.append(LogRow(ts, len(out), vals))
    elif opts.postimage:
        for ck in cks:
            row = pu.rows[ck]
            before = d.state_rows.get(ck)
            st = before.copy() if before is not None else RowState()
            st.marker = st.marker or row.marker is not None
            for name, cell in row.cells.items():
                if cell.value is None:
                    st.values.pop(name, None)
                else:
                    st.values[name] = cell.value
            d.state_rows[ck] = st
            vals = keys[ck]
            vals.update(d.image_values(st, regular, False))
            vals[L.OPERATION] = OPERATION_BYTES[POSTIMAGE]
            out.append(LogRow(ts, len(out), vals))
    out[-1].values[L.END_OF_BATCH] = TRUE
    return out
