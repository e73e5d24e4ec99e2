"""The HTTP endpoint on the metrics port: ``/metrics`` (Prometheus, unchanged), the console and its API.

Defended as every port of ``logtide serve`` is (``docs/server.md``, "Before
login"): at most ``max_connections`` connections at once (more are closed as
accepted), a request's head (request line and headers) bounded to
``MAX_HEAD`` bytes and read within ``head_timeout`` seconds (a slowloris is
cut off), a body only for ``POST /login`` and at most ``MAX_BODY`` bytes, any
other method refused with 405, an unknown path a 404 page, and an internal
error a 500 page with no traceback (logged once a minute).
"""

from __future__ import annotations

import gzip
import json
import logging
import socket
import threading
import time
import urllib.parse
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any, Callable

from logtide.ratelog import RateLimitedLog

log = logging.getLogger("logtide.console")

MAX_HEAD = 16 << 10  # request line and headers
MAX_BODY = 4 << 10  # a login form
STATIC_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                ".css": "text/css; charset=utf-8", ".txt": "text/plain; charset=utf-8"}
SECURITY_HEADERS = (("X-Content-Type-Options", "nosniff"), ("X-Frame-Options", "DENY"),
                    ("Referrer-Policy", "no-referrer"),
                    ("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"))


class HeadTooLarge(Exception):
    """A request's head passed ``MAX_HEAD`` bytes."""


class BoundedReader:
    """The connection's input with a byte budget for the request head (``http.server`` reads it by lines)."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.budget = MAX_HEAD

    def readline(self, limit: int = -1) -> bytes:
        if self.budget <= 0:
            raise HeadTooLarge()
        cap = self.budget + 1 if limit < 0 else min(limit, self.budget + 1)
        line = self.raw.readline(cap)
        self.budget -= len(line)
        if self.budget < 0:
            raise HeadTooLarge()
        return line

    def read(self, n: int = -1) -> bytes:
        return self.raw.read(n)

    def close(self) -> None:
        self.raw.close()


@dataclass(frozen=True)
class Response:
    """What a route answers: a status, a body and its type, and extra headers."""

    status: int
    body: bytes
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()


def json_response(doc: Any, status: int = 200, headers: tuple[tuple[str, str], ...] = ()) -> Response:
    """A JSON answer (values JSON cannot hold are shown as text)."""
    return Response(status, json.dumps(doc, default=str, separators=(",", ":")).encode(), "application/json",
                    headers)


def error_page(status: int, message: str) -> Response:
    """A small HTML page naming the problem (never a traceback)."""
    phrase = HTTPStatus(status).phrase
    text = (f"<!doctype html><meta charset=utf-8><title>{status} {phrase}</title>"
            f"<h1>{status} {phrase}</h1><p>{_escape(message)}</p><p><a href=\"/\">logtide console</a></p>")
    return Response(status, text.encode(), "text/html; charset=utf-8")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


class ConsoleServer(ThreadingHTTPServer):
    """A threading HTTP server with a connection cap and a deadline on each request's head."""

    daemon_threads = True
    request_queue_size = 64

    def __init__(self, address: tuple[str, int], router: "Router", max_connections: int, head_timeout: float,
                 family: int) -> None:
        self.address_family = family
        self.router = router
        self.slots = threading.BoundedSemaphore(max_connections)
        self.head_timeout = head_timeout
        self.failures = RateLimitedLog(log)
        self.reading: dict[socket.socket, float] = {}  # connection -> deadline of the head being read
        self.reading_lock = threading.Lock()
        super().__init__(address, Handler)
        self._reaper = threading.Thread(target=self._reap, name="logtide-console-reaper", daemon=True)
        self._closing = threading.Event()
        self._reaper.start()

    def server_bind(self) -> None:
        if self.address_family == socket.AF_INET6:
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        super().server_bind()

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            self.failures.warning("console-cap", "refusing connections on the console/metrics port: %s",
                                  "too many open at once")
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self.reading_lock:
                self.reading.pop(request, None)
            self.slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        self.failures.warning("console-error", "console connection from %s failed", client_address[0])

    def reading_head(self, sock: socket.socket, on: bool) -> None:
        with self.reading_lock:
            if on:
                self.reading[sock] = time.monotonic() + self.head_timeout
            else:
                self.reading.pop(sock, None)

    def _reap(self) -> None:
        """Close connections whose request head is not in by its deadline (idle keep-alives too)."""
        while not self._closing.wait(0.5):
            now = time.monotonic()
            with self.reading_lock:
                late = [s for s, deadline in self.reading.items() if deadline < now]
                for s in late:
                    del self.reading[s]
            for s in late:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def server_close(self) -> None:
        self._closing.set()
        super().server_close()


class Handler(BaseHTTPRequestHandler):
    """One connection: its requests routed by ``ConsoleServer.router``."""

    server: ConsoleServer
    protocol_version = "HTTP/1.1"
    server_version = "logtide"
    sys_version = ""
    timeout = 30.0  # a socket read or write stalled this long ends the connection

    def setup(self) -> None:
        super().setup()
        self.rfile = BoundedReader(self.rfile)  # type: ignore[assignment]

    def handle_one_request(self) -> None:
        self.rfile.budget = MAX_HEAD  # type: ignore[attr-defined]
        self.server.reading_head(self.connection, True)
        try:
            super().handle_one_request()
        except HeadTooLarge:
            self.close_connection = True
            self.server.reading_head(self.connection, False)
            self.requestline, self.request_version, self.command = "", "HTTP/1.1", "GET"
            self._send(error_page(431, f"the request's line and headers are limited to {MAX_HEAD} bytes"))
        except (OSError, ValueError):
            self.close_connection = True

    def parse_request(self) -> bool:
        ok = super().parse_request()
        self.server.reading_head(self.connection, False)
        return ok

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's name
        """Requests are not logged (a scraper every few seconds would fill the log)."""

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own errors (bad request line, 414, ...) as our error page, then close."""
        self.close_connection = True
        self._send(error_page(code, message or HTTPStatus(code).phrase))

    def _body(self) -> bytes | None:
        """The request body (None when refused: an answer was sent)."""
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            self.close_connection = True
            self._send(error_page(411, "a body needs a Content-Length"))
            return None
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_BODY:
            self.close_connection = True
            self._send(error_page(413, f"a request body is limited to {MAX_BODY} bytes"))
            return None
        return self.rfile.read(length) if length else b""

    def _dispatch(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        body = b""
        if self.command == "POST":
            read = self._body()
            if read is None:
                return
            body = read
        elif self.headers.get("Content-Length") not in (None, "0") or self.headers.get("Transfer-Encoding"):
            self.close_connection = True  # a GET with a body: do not read it as the next request
        request = Request(self.command, url.path, urllib.parse.parse_qs(url.query, max_num_fields=50),
                          self.headers, body, self.client_address[0])
        try:
            response = self.server.router(request)
        except Exception:  # noqa: BLE001 - a bug must not reach the client as a traceback
            self.server.failures.error("console-bug", "console request %s %s failed", self.command, url.path,
                                       exc_info=True)
            response = error_page(500, "the console could not answer this request; the server log says why")
        self._send(response)

    do_GET = do_HEAD = do_POST = _dispatch

    def __getattr__(self, name: str) -> Callable[[], None]:
        """Every other method (PUT, DELETE, PATCH, ...) is refused: the console is read-only."""
        if name.startswith("do_"):
            return self._dispatch
        raise AttributeError(name)

    def _send(self, r: Response) -> None:
        body = r.body
        if len(body) > 1024 and "gzip" in (self.headers.get("Accept-Encoding") or "" if self.headers else "") \
                and not any(k == "Content-Encoding" for k, _ in r.headers):
            body = gzip.compress(body, 6)
            extra: tuple[tuple[str, str], ...] = (("Content-Encoding", "gzip"), ("Vary", "Accept-Encoding"))
        else:
            extra = ()
        try:
            self.send_response(r.status)
            self.send_header("Content-Type", r.content_type)
            self.send_header("Content-Length", str(len(body)))
            if self.close_connection:
                self.send_header("Connection", "close")
            for k, v in SECURITY_HEADERS + r.headers + extra:
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
        except OSError:
            self.close_connection = True


@dataclass(frozen=True)
class Request:
    """A parsed request as routes see it."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: Any
    body: bytes
    client: str

    def arg(self, name: str, default: str | None = None) -> str | None:
        values = self.query.get(name)
        return values[0] if values else default

    def cookie(self, name: str) -> str | None:
        for part in (self.headers.get("Cookie") or "").split(";"):
            k, _, v = part.strip().partition("=")
            if k == name:
                return v
        return None


Router = Callable[[Request], Response]


def static_file(name: str) -> Response | None:
    """A file of ``logtide/console/static`` (None if there is none of that name)."""
    if not name or "/" in name or name.startswith(".") or "\\" in name:
        return None
    suffix = name[name.rfind("."):] if "." in name else ""
    kind = STATIC_TYPES.get(suffix)
    if kind is None:
        return None
    try:
        data = resources.files(__package__).joinpath("static", name).read_bytes()
    except (OSError, FileNotFoundError):
        return None
    return Response(200, data, kind, (("Cache-Control", "no-cache"),))


class HttpEndpoint:
    """The running HTTP endpoint (a thread serving ``ConsoleServer``); ``port`` is where it listens."""

    def __init__(self, server: ConsoleServer) -> None:
        self.server = server
        self.port: int = server.server_address[1]
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.5},
                                        name="logtide-console", daemon=True)
        self._thread.start()

    def shutdown(self) -> None:
        self.server.shutdown()

    def server_close(self) -> None:
        self.server.server_close()


def start_http(host: str, port: int, router: Router, max_connections: int = 64,
               head_timeout: float = 15.0) -> HttpEndpoint:
    """Listen on ``host:port`` (0: a free port) and serve ``router`` on a daemon thread."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, _, _, _, address = infos[0]
    return HttpEndpoint(ConsoleServer(address[:2], router, max_connections, head_timeout, family))
