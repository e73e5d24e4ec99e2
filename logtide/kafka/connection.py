"""One Kafka client connection: size-prefixed frames, request headers, SASL, dispatch (Kafka protocol guide).

Requests on a connection are answered one at a time, in order, as Kafka
brokers do.  An API key or version not served gets UNSUPPORTED_VERSION (for
ApiVersions: error 35 with the v0 body listing what is served); a request that
does not decode closes the connection, as Kafka does; nothing a client sends
stops the broker.

Before login (with auth) a connection gets little, as on the CQL port: frames
of at most ``max_prelogin_bytes``, refused from their size prefix before the
body is read; only ApiVersions and the SASL APIs (as Kafka's SASL server);
``auth_timeout`` seconds to log in.  After login frames may be up to
``max_request_bytes``; a connection with no request for ``idle_timeout`` is
closed (Kafka's ``connections.max.idle.ms``).
"""

from __future__ import annotations

import asyncio
import logging
import struct
from typing import Any, Callable, TypeVar

from logtide.errors import AuthenticationError
from logtide.scram import SHA256, SHA512, ScramCredentials, ScramError, ScramServer

from . import errors as E
from .codec import MalformedFrame, Reader, TooManyElements, Writer
from .handlers import HANDLERS, supported_api_keys
from .messages import API_VERSIONS, APIS, request_header_flexible, response_header_flexible

KafkaBroker = Any  # the broker.KafkaBroker that accepted the connection (it imports this module, not back)

log = logging.getLogger("logtide.kafka")
R = TypeVar("R")
SASL_APIS = (17, 18, 36)  # what an unauthenticated connection may send
CLOSE_DELAY = 0.1  # seconds between a final answer (failed authentication) and closing the connection
MECHANISMS = ("PLAIN", SHA256, SHA512)


class SaslFailed(Exception):
    """The SASL exchange failed; the message is the client's."""


class CloseConnection(Exception):
    """The connection ends after the answer in hand (if any) is sent."""


class KafkaConnection:
    """Serves one client until it disconnects or the broker stops."""

    def __init__(self, broker: "KafkaBroker", reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.broker = broker
        self.topics = broker.topics
        self.reader = reader
        self.writer = writer
        peer = writer.get_extra_info("peername")
        self.peer_host = f"/{peer[0]}" if isinstance(peer, tuple) else "/unknown"
        self.client_id: str | None = None
        self.authenticated = not broker.auth_required
        self.role: str | None = None
        self.sasl_mechanism: str | None = None
        self.raw_sasl = False  # SaslHandshake v0: the next frames are bare SASL tokens
        self.scram: ScramServer | None = None  # the SCRAM exchange under way
        self.address = peer[0] if isinstance(peer, tuple) else "unknown"
        self.opened = self.last_request = 0.0
        self.busy = False  # a request is being answered (a long-poll Fetch, a JoinGroup, a login check)
        self._watchdog: asyncio.TimerHandle | None = None

    def closing(self) -> bool:
        return self.writer.is_closing()

    async def blocking(self, fn: Callable[..., R], *args: Any) -> R:
        return await asyncio.get_running_loop().run_in_executor(self.broker.pool, fn, *args)

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        self.opened = self.last_request = loop.time()
        self._check_timeouts()
        try:
            while True:
                try:
                    head = await self.reader.readexactly(4)
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                (size,) = struct.unpack(">i", head)
                limit = self.frame_limit()
                if size < 0 or size > limit:
                    self.broker.failures.warning(
                        "frame size" if self.authenticated else "frame size before login",
                        "closing Kafka connection from %s: a frame of %d bytes, over the %d allowed %s",
                        self.peer_host, size, limit,
                        "after login (--kafka-max-request-bytes)" if self.authenticated else "before login")
                    return
                frame = await self.reader.readexactly(size)
                self.busy, self.last_request = True, loop.time()
                try:
                    answer = await self.handle(frame)
                except CloseConnection as e:
                    if e.args and e.args[0]:
                        await self._send(e.args[0])
                        # as Kafka (connection.failed.authentication.delay.ms): the client reads the answer
                        # before the connection closes, never a bare disconnect
                        await asyncio.sleep(CLOSE_DELAY)
                    return
                finally:
                    self.busy, self.last_request = False, loop.time()
                if answer is not None:
                    await self._send(answer)
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            return
        except Exception:  # a bug must cost one connection, never the broker
            log.exception("Kafka connection from %s failed", self.peer_host)
        finally:
            if self._watchdog is not None:
                self._watchdog.cancel()
            self.writer.close()

    def frame_limit(self) -> int:
        """The largest frame this connection may send now."""
        config = self.broker.config
        if self.authenticated:
            return config.max_request_bytes
        return min(config.max_prelogin_bytes, config.max_request_bytes)

    def _check_timeouts(self) -> None:
        """Close a connection not logged in within ``auth_timeout``, or one that has sent no request and has
        none being answered for ``idle_timeout``; otherwise check again at the next deadline."""
        self._watchdog = None
        if self.writer.is_closing():
            return
        config = self.broker.config
        loop = asyncio.get_running_loop()
        now = loop.time()
        if not self.authenticated and config.auth_timeout > 0:
            deadline = now + 0.1 if self.busy else self.opened + config.auth_timeout  # a login being checked
            if now >= deadline:
                self.broker.failures.warning(
                    "auth timeout", "closing Kafka connection from %s: not logged in within %g s (--auth-timeout)",
                    self.peer_host, config.auth_timeout)
                self.writer.transport.abort()
                return
        elif config.idle_timeout > 0:
            deadline = (now if self.busy else self.last_request) + config.idle_timeout
            if now >= deadline:
                log.info("closing Kafka connection from %s: no request for %g s (--kafka-idle-timeout)",
                         self.peer_host, config.idle_timeout)
                self.writer.transport.abort()
                return
        else:
            return
        self._watchdog = loop.call_later(max(deadline - now, 0.01), self._check_timeouts)

    async def _send(self, data: bytes) -> None:
        self.writer.write(struct.pack(">i", len(data)) + data)
        await self.writer.drain()

    async def handle(self, frame: bytes) -> bytes | None:
        if self.raw_sasl:
            return await self._raw_sasl_token(frame)
        r = Reader(frame)
        try:
            api_key, version, correlation_id = r.int16(), r.int16(), r.int32()
            client_id = r.string(nullable=True)
        except MalformedFrame as e:
            log.debug("bad request header from %s: %s", self.peer_host, e)
            raise CloseConnection() from None
        self.client_id = client_id
        api = APIS.get(api_key)
        if api is None or not api.min_version <= version <= api.max_version:
            return self._unsupported(api_key, correlation_id)
        self.broker.requests[(api_key, version)] += 1
        if not self.authenticated and api_key not in SASL_APIS:
            self.broker.failures.info("before login", "closing Kafka connection from %s: API key %d before SASL "
                                      "authentication (only ApiVersions and SASL are served before login)",
                                      self.peer_host, api_key)
            raise CloseConnection()
        try:
            if request_header_flexible(api_key, version):
                r.skip_tagged_fields()
            r.elements = self.broker.config.max_request_elements
            req = api.requests[version].decode(r)
        except TooManyElements as e:
            self.broker.failures.info("too many elements", "closing Kafka connection from %s: %s v%d: %s",
                                      self.peer_host, api.name, version, e)
            raise CloseConnection() from None
        except MalformedFrame as e:
            log.debug("malformed %s v%d from %s: %s", api.name, version, self.peer_host, e)
            raise CloseConnection() from None
        if api_key == 17:
            body, close = self._sasl_handshake(req, version), False
        elif api_key == 36:
            body, close = await self._sasl_authenticate(req)
        else:
            result = HANDLERS[api_key](self, req, version)
            body, close = (await result if asyncio.iscoroutine(result) else result), False
        if body is None:
            return None
        w = Writer()
        w.int32(correlation_id)
        if response_header_flexible(api_key, version):
            w.no_tagged_fields()
        api.responses[version].encode(body, w)
        if close:
            raise CloseConnection(bytes(w.buf))
        return bytes(w.buf)

    def _unsupported(self, api_key: int, correlation_id: int) -> bytes:
        """UNSUPPORTED_VERSION: ApiVersions answers with its v0 body listing what is served (KIP-511)."""
        w = Writer()
        w.int32(correlation_id)
        if api_key == 18:
            API_VERSIONS.responses[0].encode({"error_code": E.UNSUPPORTED_VERSION, "api_keys": supported_api_keys()}, w)
        else:
            w.int16(E.UNSUPPORTED_VERSION)
        return bytes(w.buf)

    # -- SASL -------------------------------------------------------------------
    def _sasl_handshake(self, req: dict, version: int) -> dict:
        mechanism = req["mechanism"]
        if mechanism not in MECHANISMS:
            return {"error_code": E.UNSUPPORTED_SASL_MECHANISM, "mechanisms": list(MECHANISMS)}
        self.sasl_mechanism = mechanism
        self.scram = None if mechanism == "PLAIN" else ScramServer(
            lambda user: self._scram_lookup(user, mechanism), mechanism=mechanism)
        self.raw_sasl = version == 0
        return {"error_code": E.NONE, "mechanisms": list(MECHANISMS)}

    async def _sasl_authenticate(self, req: dict) -> tuple[dict, bool]:
        if self.sasl_mechanism is None:
            return {"error_code": E.ILLEGAL_SASL_STATE, "error_message": "SaslHandshake must come first"}, True
        try:
            reply = await self._sasl_step(req["auth_bytes"])
        except SaslFailed as e:
            log.info("Kafka SASL/%s login from %s failed: %s", self.sasl_mechanism, self.peer_host, e)
            return {"error_code": E.SASL_AUTHENTICATION_FAILED, "error_message": str(e)}, True
        return {"error_code": E.NONE, "error_message": None, "auth_bytes": reply}, False

    async def _raw_sasl_token(self, token: bytes) -> bytes:
        """SaslHandshake v0: SASL tokens as bare frames until the exchange is over (a failure closes)."""
        try:
            reply = await self._sasl_step(token)
        except SaslFailed as e:
            log.info("Kafka SASL/%s login from %s failed: %s", self.sasl_mechanism, self.peer_host, e)
            raise CloseConnection() from None
        self.raw_sasl = self.scram is not None and not self.scram.done  # SCRAM: client-final comes bare too
        return reply

    async def _sasl_step(self, token: bytes) -> bytes:
        """One client token of the handshake's mechanism; the server's reply.  Raises SaslFailed."""
        if self.scram is None:
            error = await self._login(token)
            if error is not None:
                raise SaslFailed(error)
            return b""
        scram = self.scram
        try:
            if scram.awaiting_proof:  # the proof is checked as a login: bounded, slowed down after failures
                reply = await self.broker.login.check(self.address, scram.name, self._scram_final, scram, token)
            else:
                reply = await self.blocking(scram.step, token)
        except (ScramError, AuthenticationError) as e:
            self.scram = None
            raise SaslFailed(str(e)) from None
        if scram.done:
            self.authenticated = True
        return reply

    def _scram_final(self, scram: ScramServer, token: bytes) -> bytes:
        """The SCRAM client-final message: the proof, then the role's LOGIN right (AuthenticationError if not)."""
        try:
            reply = scram.step(token)
        except ScramError as e:
            raise AuthenticationError(str(e)) from None
        assert scram.user is not None
        self.role = self.broker.auth.check_login(scram.user)
        return reply

    def _scram_lookup(self, user: str, mechanism: str) -> ScramCredentials:
        if self.broker.auth is None:
            raise ScramError(f"{mechanism} needs logtide's roles: this endpoint has none (use SASL/PLAIN or none)")
        return self.broker.auth.scram_lookup(user, mechanism)

    async def _login(self, token: bytes) -> str | None:
        """Check a SASL/PLAIN token (authzid NUL user NUL password, RFC 4616); the error message or None."""
        parts = token.split(b"\0")
        if len(parts) != 3:
            return "malformed SASL/PLAIN token"
        try:
            user, password = parts[1].decode("utf-8"), parts[2].decode("utf-8")
        except UnicodeDecodeError:
            return "malformed SASL/PLAIN token"
        if not self.broker.auth_required:
            self.authenticated = True  # an open endpoint accepts any login, like the CQL port without --auth
            return None
        try:
            self.role = await self.broker.login.login(self.address, user, password)
        except AuthenticationError as e:
            return str(e)
        self.authenticated = True
        return None
