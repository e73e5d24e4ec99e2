"""Listening on a port: binding, an accept loop that outlives running out of descriptors, and the cap.

The CQL port and the Kafka endpoint both accept through a ``Listener``.
asyncio's own accept loop (``start_server``) is not used: when accept() fails
for want of descriptors it tries again up to 100 times in a row and schedules
a retry for each failure, each retry doing the same, so retries multiply
(1.55 million failed accepts a minute were measured with both ports full) and
every retry still pending when the server stops prints a traceback.  Here one task per listening socket
accepts; when accept() fails with EMFILE, ENFILE, ENOBUFS or ENOMEM it logs
once per interval (``logtide.ratelog``) and pauses accepting for a second,
while open connections keep being served.  A connection past the cap
(``limits.ConnectionSlots``) is closed as soon as it is accepted, logged
once per interval as well.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import ssl
from typing import Any, Awaitable, Callable

from logtide.ratelog import RateLimitedLog

from .limits import ConnectionSlots

log = logging.getLogger("logtide.server")

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
OUT_OF_RESOURCES = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
ACCEPT_PAUSE = 1.0  # seconds without accepting after accept() ran out of descriptors
BACKLOG = 100
STREAM_LIMIT = 1 << 20


class Listener:
    """Accepts connections for one port (``name``: "CQL", "Kafka") and runs ``handler(reader, writer)``
    for each one the shared ``slots`` have room for.

    ``tls`` wraps accepted connections (the handshake runs in the connection's own task, at most
    ``handshake_timeout`` seconds, and holds its place meanwhile)."""

    def __init__(self, name: str, handler: Handler, slots: ConnectionSlots, failures: RateLimitedLog,
                 tls: ssl.SSLContext | None = None, handshake_timeout: float | None = None) -> None:
        self.name = name
        self.handler = handler
        self.slots = slots
        self.failures = failures
        self.tls = tls
        self.handshake_timeout = handshake_timeout if handshake_timeout and handshake_timeout > 0 else None
        self.sockets: list[socket.socket] = []
        self._accepting: list[asyncio.Task] = []
        self._starting: set[asyncio.Task] = set()  # connections not yet handed to ``handler`` (TLS handshakes)
        self._closed = False
        slots.register(name)

    async def start(self, host: str | None, port: int) -> tuple[str, int]:
        """Bind every address ``host`` resolves to and start accepting; the first bound (host, port)."""
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        try:
            for family, kind, proto, _, address in dict.fromkeys(infos):
                sock = socket.socket(family, kind, proto)
                self.sockets.append(sock)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)  # as asyncio: one family a socket
                try:
                    sock.bind(address)
                except OSError as e:
                    raise OSError(e.errno, f"cannot bind to {address[0]}:{address[1]}: {e.strerror}") from None
                sock.listen(BACKLOG)
                sock.setblocking(False)
        except BaseException:
            for sock in self.sockets:
                sock.close()
            self.sockets.clear()
            raise
        self._accepting = [loop.create_task(self._accept_loop(sock)) for sock in self.sockets]
        bound = self.sockets[0].getsockname()
        return bound[0], bound[1]

    async def close(self) -> None:
        """Stop accepting and close the listening sockets; connections still in their TLS handshake end.
        Connections already handed to ``handler`` are the owner's to stop."""
        self._closed = True
        for task in self._accepting + list(self._starting):
            task.cancel()
        pending = self._accepting + list(self._starting)
        if pending:
            await asyncio.wait(pending, timeout=10)
        for sock in self.sockets:
            sock.close()

    async def _accept_loop(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while not self._closed:
            try:
                conn, peer = await loop.sock_accept(sock)
            except asyncio.CancelledError:
                return
            except OSError as e:
                if e.errno in (errno.ECONNABORTED, errno.EPROTO, errno.EINTR, errno.EAGAIN):
                    continue  # the client gave up before it was accepted
                kind = "out of descriptors" if e.errno in OUT_OF_RESOURCES else "failed"
                self.failures.error(f"{self.name} accept {kind}",
                                    "cannot accept new %s connections: %s; open connections are still served, "
                                    "accepting resumes when descriptors are free", self.name, e.strerror or e)
                try:
                    await asyncio.sleep(ACCEPT_PAUSE)
                except asyncio.CancelledError:
                    return
                continue
            self._admit(conn, peer)

    def _admit(self, conn: socket.socket, peer: Any) -> None:
        if not self.slots.take(self.name):
            self.failures.warning(f"{self.name} connection limit",
                                  "refusing connections on the %s port (first from %s): %d open here, %d on all "
                                  "ports, the limit %d (--max-connections, or what the open file limit allows)",
                                  self.name, peer[0] if isinstance(peer, tuple) else peer,
                                  self.slots.held(self.name), self.slots.held(), self.slots.cap)
            conn.close()
            return
        conn.setblocking(False)
        try:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # small answers go out at once
        except OSError:
            pass
        task = asyncio.get_running_loop().create_task(self._serve(conn))
        self._starting.add(task)

    async def _serve(self, conn: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        try:
            try:
                reader = asyncio.StreamReader(limit=STREAM_LIMIT)
                protocol = asyncio.StreamReaderProtocol(reader)
                extra: dict[str, Any] = {}
                if self.tls is not None and self.handshake_timeout is not None:
                    extra["ssl_handshake_timeout"] = self.handshake_timeout
                transport, _ = await loop.connect_accepted_socket(lambda: protocol, conn, ssl=self.tls, **extra)
            except (OSError, ssl.SSLError, asyncio.TimeoutError, ValueError) as e:
                log.debug("%s connection closed before it started: %s", self.name, e)
                conn.close()
                return
            except asyncio.CancelledError:
                conn.close()
                return
            finally:
                self._starting.discard(task)  # type: ignore[arg-type]
            writer = asyncio.StreamWriter(transport, protocol, reader, loop)
            await self.handler(reader, writer)
        finally:
            self.slots.release(self.name)
