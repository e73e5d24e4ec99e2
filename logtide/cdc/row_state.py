"""The state of a touched row as the CDC derivation follows it through a write (spec ``000``): what its preimage
and postimage rows show, the atomic values and the element maps of its complex columns.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..query.read import LiveRow
from .split import RowDelta


@dataclass
class RowState:
    """The CQL-visible content of one row: atomic values and element maps of complex columns."""

    marker: bool = False
    values: dict[str, bytes] = field(default_factory=dict)
    elements: dict[str, dict[bytes, bytes]] = field(default_factory=dict)
    # frozen log values of element maps, kept while a column is unchanged (a postimage reuses the
    # preimage's encoding of every collection the write did not touch)
    frozen: dict[str, bytes] = field(default_factory=dict)

    @classmethod
    def of(cls, row: LiveRow | None) -> "RowState | None":
        if row is None:
            return None
        return cls(row.marker_live, {n: c.value for n, c in row.cells.items()},
                   {n: {k: c.value for k, c in elems} for n, elems in row.complex.items()})

    def exists(self) -> bool:
        return self.marker or bool(self.values) or any(self.elements.values())

    def copy(self) -> "RowState":
        """A copy sharing the element maps; ``_apply`` copies a map before changing it."""
        return RowState(self.marker, dict(self.values), dict(self.elements), dict(self.frozen))

    def changing(self, name: str) -> dict[bytes, bytes]:
        """The element map of ``name``, private to this state and ready to change."""
        self.frozen.pop(name, None)
        elems = dict(self.elements.get(name) or {})
        self.elements[name] = elems
        return elems


@dataclass
class PreState:
    """The touched rows before the write: the static row and clustered rows by clustering key."""

    static: LiveRow | None = None
    rows: dict[bytes, LiveRow | None] = field(default_factory=dict)


def applied(state: RowState | None, delta: RowDelta) -> RowState | None:
    """The state of a row after one change (``delta``) of the write: the preimage with the delta applied."""
    if delta.deleted:
        state = None
    if not delta.has_cells():
        return state
    st = state.copy() if state is not None else RowState()
    st.marker = st.marker or delta.marker
    for name, cell in delta.cells.items():
        if cell.value is None:
            st.values.pop(name, None)
        else:
            st.values[name] = cell.value
    for name in delta.collection_deleted:
        st.elements.pop(name, None)
        st.frozen.pop(name, None)
    for name, added in delta.added.items():
        st.changing(name).update(added)
    for name, removed in delta.removed.items():
        if st.elements.get(name):
            elems = st.changing(name)
            for k in removed:
                elems.pop(k, None)
    return st
