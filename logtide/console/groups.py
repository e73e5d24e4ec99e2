"""The Kafka endpoint's consumer groups as the console shows them (Kafka UI's "Consumers" page).

Group membership lives on the server's event loop (``kafka.groups.Coordinator``);
:func:`snapshot` copies it there (``asyncio.run_coroutine_threadsafe``) so
that an HTTP thread never reads it while the loop changes it.  A group's
committed offsets are the changefeed consumer of its name (``docs/kafka.md``),
so the console shows members beside those offsets.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

Visible = Callable[[str, str], bool]


def _copy(broker: Any, visible: Visible) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for group_id, g in list(broker.coordinator.groups.items()):
        topics = sorted(g.topics(), key=lambda r: r.path)
        members = [{"member_id": m.member_id, "client_id": m.client_id, "client_host": m.client_host,
                    "group_instance_id": m.group_instance_id,
                    "session_timeout_ms": m.session_timeout_ms}
                   for m in g.members.values()]
        out[group_id] = {"group": group_id, "state": g.state, "generation": g.generation,
                         "protocol_type": g.protocol_type, "protocol": g.protocol, "leader": g.leader,
                         "members": members, "topics": [t.path for t in topics],
                         # DESCRIBE on a group, as the Kafka endpoint checks it (kafka/acl.py): SELECT on the
                         # table of each of its topics; a group without topics is visible to every role
                         "visible": all(visible(t.keyspace, t.table) for t in topics)}
    return out


def snapshot(broker: Any, loop: asyncio.AbstractEventLoop | None, visible: Visible,
             timeout: float = 5.0) -> dict[str, Any]:
    """Every consumer group of ``broker`` by id (empty without a Kafka endpoint)."""
    if broker is None or loop is None or loop.is_closed():
        return {}

    async def copy() -> dict[str, Any]:
        return _copy(broker, visible)

    try:
        return asyncio.run_coroutine_threadsafe(copy(), loop).result(timeout)
    except (RuntimeError, TimeoutError, asyncio.TimeoutError):  # the loop is stopping
        return {}
