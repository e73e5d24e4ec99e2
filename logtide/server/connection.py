"""One client connection: the handshake, then requests on many streams at once.

The read loop cuts frames out of the bytes read (``FrameReader``) and handles
them in order.  OPTIONS, STARTUP, AUTH_RESPONSE and
REGISTER are answered in the loop; a write (QUERY, EXECUTE or BATCH of
INSERT, UPDATE, DELETE) is bound and checked in the loop and committed by
the server's committer thread (``committer``), or by the loop itself when it
is the only statement in flight (``Committer.commit_now``); every other QUERY, PREPARE,
EXECUTE and BATCH runs in the server's thread pool.  Either calls back with
the response when done, so a slow statement holds up neither its neighbours
on the connection nor other connections.  At most ``max_in_flight`` statements run per
connection; past that the loop stops reading (TCP backpressure).

Frame-level errors (bad header, unsupported version, oversized or corrupt
frames) are answered with a protocol ERROR and the connection is closed;
a malformed message body only gets an ERROR on its stream.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import traceback
from typing import Any, Callable

from logtide.errors import AuthenticationError, CqlError, ProtocolError, ServerError, StorageFailure
from logtide.tracing import REQUEST_NAMES, TracingSession, query_parameters

from . import messages as M
from .compression import Compression
from .frame import (FLAG_COMPRESSED, FLAG_TRACING, FLAG_WARNING, Frame, FrameError, FrameReader, SegmentCodec,
                    UnsupportedVersion, encode_frame, encode_legacy_error_frame)
from .statements import Outcome
from .wire import BodyWriter

Server = Any  # the server.Server that accepted the connection (it imports this module, not back)

log = logging.getLogger("logtide.server")

PASSWORD_AUTHENTICATOR = "org.apache.cassandra.auth.PasswordAuthenticator"
EVENT_STREAM = -1
YIELD_EVERY = 8
WRITE_BUFFER_LIMIT = 1 << 20

NEW, AUTHENTICATING, READY = "new", "authenticating", "ready"
# a write request body up to this size is decoded and bound on the loop and committed by the committer
# thread; a bigger one (a huge BATCH) runs on the worker pool, where it cannot hold the loop for long
LOOP_PLAN_LIMIT = 64 * 1024
SMALL_BODY, SMALL_BODIES = 64, 64  # response bodies up to SMALL_BODY bytes are compressed once (at most SMALL_BODIES kept)


def opcode_writes(opcode: int) -> bool:
    """QUERY, EXECUTE and BATCH may write (PREPARE never does)."""
    return opcode != M.PREPARE


def parse_sasl_plain(token: bytes | None) -> tuple[str, str]:
    """(user, password) from a SASL PLAIN token ``[authzid] NUL authcid NUL password``."""
    parts = (token or b"").split(b"\x00")
    if len(parts) < 3:
        raise AuthenticationError("Authentication ID must not be null")
    user, password = parts[-2], parts[-1]
    if not user:
        raise AuthenticationError("Authentication ID must not be null")
    if not password:
        raise AuthenticationError("Password must not be null")
    try:
        return user.decode("utf-8"), password.decode("utf-8")
    except UnicodeDecodeError:
        raise AuthenticationError("Invalid UTF-8 in credentials") from None


class Connection:
    """Serves one client until it disconnects or the server stops."""

    def __init__(self, server: "Server", reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.server = server
        self.writer = writer
        config = server.config
        # until a session starts, only small frames (STARTUP, AUTH_RESPONSE) are read
        self.frames = FrameReader(reader, min(config.max_frame_body, config.max_auth_frame_body))
        self.state = NEW
        self.session: Any = None
        self.compression: Compression | None = None  # v3/v4 responses
        self._small_bodies: dict[bytes, bytes] = {}  # small response bodies, compressed
        self.segments: SegmentCodec | None = None
        self.registered: set[str] = set()
        self._out: list[bytes] = []  # encoded frames waiting for the next flush
        self._flush_scheduled = False
        self.tasks: set[Any] = set()  # statements running or queued in the pool (each by its job)
        self._drained: asyncio.Future | None = None  # made when closing with statements in flight
        self._free_slots = server.config.max_in_flight  # statements this connection may still start
        self._slot_freed: asyncio.Future | None = None  # the read loop waits on it when no slot is free
        self._loop = asyncio.get_running_loop()
        self.closed = False
        peer = writer.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else str(peer)
        self.address = str(peer[0]) if isinstance(peer, tuple) and peer else str(peer)
        self.port = int(peer[1]) if isinstance(peer, tuple) and len(peer) >= 2 else 0
        self.startup_options: dict[str, str] = {}  # the STARTUP message's options (system.clients)
        self.opened = self.last_frame = 0.0
        self._watchdog: asyncio.TimerHandle | None = None
        self._logging_in = False  # a login is being checked: the deadline waits for its answer
        self.awaited = 0  # held DDL answers waiting for this connection to read the schema (schema_events)

    @property
    def version(self) -> int:
        return self.frames.version or 4

    # -- the read loop --------------------------------------------------------
    async def run(self) -> None:
        """Serve until the client leaves, a frame-level error, or cancellation (server stop).

        Whatever ends the loop, statements already started finish and answer
        before the socket is closed.
        """
        loop = self._loop
        self.opened = self.last_frame = loop.time()
        self._check_timeouts()
        frames = self.frames
        try:
            handled = 0
            while not self.closed:
                while self._free_slots <= 0:  # max_in_flight statements running: stop reading
                    self._slot_freed = loop.create_future()
                    await self._slot_freed
                frame = frames.next_buffered() or await frames.read()
                self.last_frame = loop.time()
                self._free_slots -= 1
                if self.state == READY and frame.opcode in M.STATEMENT_OPCODES:
                    self._dispatch_statement(frame)
                else:
                    await self._dispatch(frame)
                handled += 1
                if self.writer.transport.get_write_buffer_size() > WRITE_BUFFER_LIMIT:
                    await self.drain()  # a client that does not read gets no more work done
                elif handled % YIELD_EVERY == 0:
                    await asyncio.sleep(0)  # buffered frames never block: let other connections have a turn
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass  # the client went away
        except UnsupportedVersion as e:
            await self._fatal_version_error(e)
        except FrameError as e:
            await self._fatal(e.stream, e)
        except asyncio.CancelledError:
            pass  # the server is stopping
        except Exception as e:  # never let one connection take the server down
            self.server.failures.error(_bug_kind(e), "unexpected error on connection from %s", self.peer,
                                       exc_info=True)
        finally:
            if self._watchdog is not None:
                self._watchdog.cancel()
            if self.tasks:  # statements still running: they answer before the socket closes
                self._drained = loop.create_future()
                await asyncio.wait([self._drained], timeout=self.server.config.shutdown_timeout)
            await self.close()

    def _dispatch_statement(self, frame: Frame) -> None:
        """A QUERY, PREPARE, EXECUTE or BATCH on a ready connection: handed on without awaiting anything."""
        started = time.perf_counter()
        try:
            request = M.decode_request(frame)
        except CqlError as e:
            self._respond_now(frame.stream, M.error(e, self.version))
            self.server.metrics.request_done(M.OPCODE_NAMES.get(frame.opcode, str(frame.opcode)),
                                             type(e).__name__, time.perf_counter() - started)
            self._release_slot()
            return
        self._start_statement(frame, request)  # the statement releases the slot

    def _release_slot(self) -> None:
        self._free_slots += 1
        waiter = self._slot_freed
        if waiter is not None:
            self._slot_freed = None
            if not waiter.done():
                waiter.set_result(None)

    async def _dispatch(self, frame: Frame) -> None:
        """Answer handshake messages at once; hand statements to the worker pool."""
        started = time.perf_counter()
        error = None
        try:
            request = M.decode_request(frame)
            if isinstance(request, M.Options):
                self._respond_now(frame.stream, M.supported(self.server.supported_options()))
            elif isinstance(request, M.Startup):
                await self._startup(frame.stream, request)
            elif isinstance(request, M.AuthResponse):
                await self._auth_response(frame.stream, request)
            elif self.state != READY:
                raise ProtocolError(self._unexpected(frame.opcode))
            elif isinstance(request, M.Register):
                self.registered.update(request.events)
                self.server.register(self)
                self._respond_now(frame.stream, M.ready())
            else:
                self._start_statement(frame, request)
                return  # the task releases the slot
        except CqlError as e:
            self._respond_now(frame.stream, M.error(e, self.version))
            error = type(e).__name__
        self.server.metrics.request_done(M.OPCODE_NAMES.get(frame.opcode, str(frame.opcode)), error,
                                         time.perf_counter() - started)
        self._release_slot()

    # -- time limits ------------------------------------------------------------
    def _check_timeouts(self) -> None:
        """Close a connection that has not started a session within ``auth_timeout``, or a session idle
        (no request received, none running) for ``idle_timeout``; otherwise check again at the next deadline."""
        self._watchdog = None
        if self.closed:
            return
        config = self.server.config
        loop = asyncio.get_running_loop()
        now = loop.time()
        if self.state != READY:
            if config.auth_timeout <= 0:
                return
            deadline = self.opened + config.auth_timeout
            if self._logging_in:
                deadline = now + 0.1
            elif now >= deadline:
                self.server.failures.warning(
                    "auth timeout", "closing connection from %s: no session started within %g s (--auth-timeout)",
                    self.peer, config.auth_timeout)
                self._abort()
                return
        elif config.idle_timeout > 0:
            deadline = (now if self.tasks else self.last_frame) + config.idle_timeout
            if now >= deadline:
                log.info("closing connection from %s: idle for %g s (--idle-timeout)", self.peer, config.idle_timeout)
                self._abort()
                return
        else:
            return
        self._watchdog = loop.call_later(max(deadline - now, 0.01), self._check_timeouts)

    def _abort(self) -> None:
        """Drop the connection now: the read loop sees the end of the stream and closes."""
        self.closed = True
        self.writer.transport.abort()

    def _unexpected(self, opcode: int) -> str:
        name = M.OPCODE_NAMES.get(opcode, str(opcode))
        if self.state == NEW:
            return f"Unexpected message {name}, expecting STARTUP or OPTIONS"
        return f"Unexpected message {name}, expecting SASL response"

    # -- handshake ------------------------------------------------------------
    async def _startup(self, stream: int, req: M.Startup) -> None:
        if self.state != NEW:
            raise ProtocolError("Unexpected message STARTUP, the connection is already initialized")
        if "CQL_VERSION" not in req.options:
            raise ProtocolError("Missing value CQL_VERSION in STARTUP message")
        self.startup_options = dict(req.options)
        name = req.options.get("COMPRESSION", "").lower()
        compression = None
        if name:
            compression = self.server.compressions.get(name)
            if compression is None or (self.version >= 5 and compression.compress_block is None):
                raise ProtocolError(f"Unknown compression algorithm: {name}")
        auth = self.server.auth
        if auth is not None and auth.enabled:
            self._respond_now(stream, M.authenticate(PASSWORD_AUTHENTICATOR))
            self.state = AUTHENTICATING
        else:
            self._respond_now(stream, M.ready())
            self._become_ready(None)
        self._flush()  # the answer to STARTUP is the last legacy frame
        if self.version >= 5:
            self.segments = SegmentCodec(compression)
            self.frames.segments = self.segments
        elif compression is not None:
            self.compression = compression
            self.frames.compression = compression

    async def _auth_response(self, stream: int, req: M.AuthResponse) -> None:
        if self.state != AUTHENTICATING:
            raise ProtocolError("Unexpected message AUTH_RESPONSE, the connection is not authenticating")
        user, password = parse_sasl_plain(req.token)
        self._logging_in = True
        try:
            role = await self.server.login.login(self.address, user, password)
        finally:
            self._logging_in = False
        self._become_ready(role)
        self._respond_now(stream, M.auth_success(None))

    def _become_ready(self, role: str | None) -> None:
        self.session = self.server.db.session(user=role)
        self.state = READY
        self.frames.max_body = self.server.config.max_frame_body
        if self._watchdog is not None:
            self._watchdog.cancel()
        self._check_timeouts()

    # -- statements -----------------------------------------------------------
    def _start_statement(self, frame: Frame, request: Any) -> None:
        """Hand a write (up to ``LOOP_PLAN_LIMIT`` bytes) to the server's committer, any other statement to the
        worker pool; no task is made per statement: either calls ``_statement_done`` on the loop when it
        finishes.  A request with the tracing flag goes its own way (``_start_traced``)."""
        if frame.flags & FLAG_TRACING:
            self._start_traced(frame, request)
            return
        runner = self.server.runner
        version = self.version
        session = self.session
        call: Callable[[], Outcome]
        if isinstance(request, M.Execute):
            call = functools.partial(runner.execute, session, request, version)
        elif isinstance(request, M.Query):
            call = functools.partial(runner.query, session, request, version)
        elif isinstance(request, M.Prepare):
            call = functools.partial(runner.prepare, session, request, version)
        else:
            call = functools.partial(runner.batch, session, request, version)
        kind = M.OPCODE_NAMES.get(frame.opcode, str(frame.opcode))
        started = time.perf_counter()
        server = self.server
        self.tasks.add(call)  # the job's own callable marks it in flight
        server.tasks.add(call)
        if self.awaited:
            server.schema_events.dispatched(self, call, request)
        done = functools.partial(self._statement_done, call, frame.stream, kind, started)
        try:
            write = None
            if server.committer is not None and len(frame.body) <= LOOP_PLAN_LIMIT and opcode_writes(frame.opcode):
                write = runner.write(session, request, version)  # checked and bound here, on the loop
            if write is not None:
                if len(server.tasks) > 1 or self.frames.buffered() or not server.committer.commit_now(write, done):
                    server.committer.post(self, write, done)
            else:
                server.post_blocking(self, call, done)
        except Exception as e:  # a bad write, or the server shutting down: answered like a failed statement
            done(False, e)

    def _start_traced(self, frame: Frame, request: Any) -> None:
        """A request with the tracing flag: open a tracing session (``logtide.tracing``) and run the request on the
        worker pool with it (a traced write goes through the engine's own group commit, not the committer
        thread, so that its stages are recorded); the answer carries the session id."""
        server = self.server
        kind = M.OPCODE_NAMES.get(frame.opcode, str(frame.opcode))
        node = getattr(server.db, "node_info", None)
        params = getattr(request, "params", None)
        if isinstance(request, M.Batch):
            parameters = query_parameters(None, request.consistency, None, request.serial_consistency)
        elif params is not None:  # QUERY, EXECUTE (whose query the runner adds once it has the statement)
            parameters = query_parameters(getattr(request, "query", None), params.consistency, params.page_size,
                                          params.serial_consistency)
        else:  # PREPARE
            parameters = query_parameters(request.query, None)
        trace = server.db.traces.start(REQUEST_NAMES.get(kind, kind), self.address,
                                       node.rpc_address if node else "127.0.0.1", node.native_port if node else 0,
                                       parameters, len(frame.body), getattr(self.session, "user", None))
        runner = server.runner
        method = {M.Query: runner.query, M.Execute: runner.execute, M.Prepare: runner.prepare,
                  M.Batch: runner.batch}[type(request)]
        call = functools.partial(method, self.session, request, self.version, trace)
        started = time.perf_counter()
        self.tasks.add(call)
        server.tasks.add(call)
        if self.awaited:
            server.schema_events.dispatched(self, call, request)
        done = functools.partial(self._statement_done, call, frame.stream, kind, started, trace=trace)
        try:
            server.post_blocking(self, call, done)
        except Exception as e:  # the server shutting down: answered like a failed statement
            done(False, e)

    def _statement_done(self, job: Any, stream: int, kind: str, started: float, ok: bool, value: Any,
                        trace: TracingSession | None = None) -> None:
        """A statement run by the pool finished: answer it (called on the loop)."""
        self.tasks.discard(job)
        self.server.tasks.discard(job)
        try:
            if ok:
                self._statement_finished(stream, kind, started, value, None, trace)
            else:
                self._statement_finished(stream, kind, started, None, value, trace)
            if self.awaited:
                self.server.schema_events.finished(self, job, ok)
        finally:
            self._release_slot()
            if not self.tasks and self._drained is not None and not self._drained.done():
                self._drained.set_result(None)

    def _statement_finished(self, stream: int, kind: str, started: float, outcome: Outcome | None,
                            exc: BaseException | None, trace: TracingSession | None = None) -> None:
        """Answer a statement with its outcome, or with the ERROR its exception calls for."""
        error = None
        if exc is None:
            assert outcome is not None
        elif isinstance(exc, StorageFailure):  # a full disk fails every write: one log line per kind per interval
            self.server.failures.warning(exc.kind, "%s (a statement from %s)", exc.message, self.peer)
            outcome = Outcome(M.error(exc, self.version))
        elif isinstance(exc, CqlError):
            outcome = Outcome(M.error(exc, self.version))
            error = type(exc).__name__
        else:  # a bug: logged with its traceback once per place and interval
            self.server.failures.error(_bug_kind(exc), "error executing a statement from %s", self.peer,
                                       exc_info=exc)
            outcome = Outcome(M.error(ServerError(f"Internal error in logtide ({type(exc).__name__}: {exc}); "
                                                  "the server log has the details"), self.version))
            error = "ServerError"
        if outcome.schema_change is None and trace is None:  # nearly every answer
            self._respond_now(stream, outcome.response, outcome.warnings)
            self.server.metrics.request_done(kind, error, time.perf_counter() - started)
            return
        if trace is not None and exc is not None:
            trace.event(f"Request failed: {type(exc).__name__}: {exc}")
        answered = outcome

        def answer() -> None:
            if trace is not None:
                trace.event(f"Sending {M.OPCODE_NAMES.get(answered.response[0], 'the answer')}")
            self._respond_now(stream, answered.response, answered.warnings, trace)
            self.server.metrics.request_done(kind, error, time.perf_counter() - started)

        if outcome.schema_change is None:
            answer()
            return
        created = [f"{c.keyspace}.{c.name}" for c in outcome.implied_changes if c.change_type == "CREATED" and c.hold]
        if trace is not None and created:
            trace.event("Waiting for the clients registered for schema events to read " + ", ".join(created))
        self.server.schema_events.announce(outcome.schema_change, outcome.implied_changes, self, answer)

    # -- output ---------------------------------------------------------------
    def _encode(self, stream: int, response: M.Response, warnings: list[str] | None = None,
                trace: TracingSession | None = None) -> bytes:
        """One response frame (compressed in v3/v4 when negotiated; v5 segments are made at flush).  The answer to
        a traced request starts with its tracing session id (before the warnings), and completes the session."""
        opcode, body = response
        flags = 0
        if warnings and self.version >= 4:
            body = BodyWriter().string_list(warnings).getvalue() + body
            flags |= FLAG_WARNING
        if trace is not None:
            body = trace.session_id.bytes + body
            flags |= FLAG_TRACING
            trace.finish(len(body))
        if self.compression is not None and self.segments is None:
            body = self._compressed(body)
            flags |= FLAG_COMPRESSED
        return encode_frame(self.version, flags, stream, opcode, body)

    def _compressed(self, body: bytes) -> bytes:
        """``body`` compressed (v3/v4); small bodies (a VOID result, most errors) are compressed once each."""
        assert self.compression is not None
        if len(body) > SMALL_BODY:
            return self.compression.compress_body(body)
        packed = self._small_bodies.get(body)
        if packed is None:
            if len(self._small_bodies) >= SMALL_BODIES:
                self._small_bodies.clear()
            packed = self._small_bodies[body] = self.compression.compress_body(body)
        return packed

    def _respond_now(self, stream: int, response: M.Response, warnings: list[str] | None = None,
                     trace: TracingSession | None = None) -> None:
        """Queue a response; everything queued in one loop iteration goes out in one write."""
        if self.closed:
            return
        self._out.append(self._encode(stream, response, warnings, trace))
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        if not self._out:
            return
        frames, self._out = self._out, []
        if self.closed:
            return
        data = self.segments.encode_frames(frames) if self.segments is not None else b"".join(frames)
        try:
            self.writer.write(data)
        except (ConnectionError, OSError, RuntimeError):
            self.closed = True

    def push_event(self, response: M.Response) -> None:
        """Send an EVENT (stream -1) to this client."""
        self._respond_now(EVENT_STREAM, response)

    async def drain(self) -> None:
        if self.closed:
            return
        try:
            await self.writer.drain()
        except (ConnectionError, OSError, RuntimeError, AssertionError):
            self.closed = True

    async def _fatal(self, stream: int, error: CqlError) -> None:
        self._respond_now(stream, M.error(error, self.version))
        self._flush()
        await self.drain()

    async def _fatal_version_error(self, e: UnsupportedVersion) -> None:
        """Answer in a frame the client can read: v4 for newer versions, the client's own below v3."""
        _, body = M.error(e)
        if e.version < 3:
            data = encode_legacy_error_frame(max(e.version, 1), e.stream, body)
        else:
            data = encode_frame(4, 0, e.stream, M.ERROR, body)
        try:
            self.writer.write(data)
        except (ConnectionError, OSError, RuntimeError):
            return
        await self.drain()

    # -- teardown -------------------------------------------------------------
    async def close(self) -> None:
        """Send what is queued and close the socket."""
        self._flush()
        self.closed = True
        self.server.unregister(self)
        try:
            self.writer.close()
            await asyncio.wait_for(self.writer.wait_closed(), timeout=5)
        except (ConnectionError, OSError, RuntimeError, asyncio.TimeoutError):
            pass
        except asyncio.CancelledError:
            pass


_STAGES = {NEW: "ESTABLISHED", AUTHENTICATING: "AUTHENTICATING", READY: "READY"}


def client_row(conn: Connection) -> dict[str, Any]:
    """One connection as a row of ScyllaDB's ``system.clients`` virtual table (``db/virtual_tables.cc``): where it
    comes from, its stage (ESTABLISHED, AUTHENTICATING, READY), what its STARTUP said, TLS, and its role."""
    ssl = conn.writer.get_extra_info("ssl_object")
    cipher = ssl.cipher() if ssl is not None else None
    options = conn.startup_options
    session = conn.session
    return {"address": conn.address, "port": conn.port, "client_type": "cql", "shard_id": 0,
            "connection_stage": _STAGES.get(conn.state, "ESTABLISHED"),
            "driver_name": options.get("DRIVER_NAME"), "driver_version": options.get("DRIVER_VERSION"),
            "hostname": conn.address, "protocol_version": conn.frames.version,
            "ssl_cipher_suite": cipher[0] if cipher else None, "ssl_enabled": ssl is not None,
            "ssl_protocol": ssl.version() if ssl is not None else None,
            "username": getattr(session, "user", None) or ("anonymous" if session is not None else None),
            "scheduling_group": "sl:default", "client_options": dict(options) or None}


def _bug_kind(exc: BaseException) -> str:
    """What a bug's log lines are grouped by: its type and the place it was raised."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"
    return f"bug {type(exc).__name__} at {where}"
