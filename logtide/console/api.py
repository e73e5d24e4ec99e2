"""The console's routes: ``/metrics``, the static page, ``/login`` and the read-only JSON API.

=====================================  ===========================================================
route                                  answer
=====================================  ===========================================================
``GET /metrics``                       Prometheus exposition, as before the console (never asks a login)
``GET /``, ``/static/NAME``            the page (``static/index.html``) and its files
``GET /api/session``                   whether a login is needed and as whom the viewer is logged in
``POST /login``, ``POST /logout``      start or end a console session (``--auth`` only)
``GET /api/overview``                  ``views.overview``
``GET /api/tables``                    ``views.tables``
``GET /api/table?ks=K&table=T``        ``views.table``
``GET /api/changefeeds``               ``views.changefeeds``
``GET /api/changefeed?path=P``         ``views.changefeed``
``GET /api/consumers``                 ``views.consumers``
``GET /api/records?path=P&...``        ``records.feed_page``
``GET /api/log?ks=K&table=T&...``      ``records.log_page``
=====================================  ===========================================================

Any other method is answered 405: nothing here writes to the database.
With ``console=False`` only ``/metrics`` is served (``--console off``).
"""

from __future__ import annotations

import asyncio
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Callable

from prometheus_client.exposition import choose_encoder

from logtide.changefeed.api import UnknownTopic
from logtide.errors import AuthenticationError

from . import groups as groups_mod
from . import records, views
from .access import COOKIE, Sessions, Viewer, session_cookie
from .web import Request, Response, error_page, json_response, static_file

READ_METHODS = ("GET", "HEAD")


@dataclass
class Console:
    """Everything the routes read: the CQL server (its database, metrics and login guard), the Kafka broker
    and the event loop both run on."""

    server: Any
    loop: asyncio.AbstractEventLoop | None = None
    broker: Any = None
    console: bool = True
    started: float = field(default_factory=time.time)
    sessions: Sessions = field(default_factory=Sessions)

    @property
    def auth(self) -> Any:
        auth = getattr(self.server.db, "auth", None)
        return auth if auth is not None and getattr(auth, "enabled", False) else None

    def __call__(self, request: Request) -> Response:
        path = request.path
        if path == "/metrics":
            if request.method not in READ_METHODS:
                return _not_allowed("GET")
            return self.metrics(request)
        if not self.console:
            return error_page(404, f"no page {path}: the console is off (--console off); /metrics is served")
        if path in ("/login", "/logout"):
            if request.method != "POST":
                return _not_allowed("POST")
            return self.login(request) if path == "/login" else self.logout(request)
        if request.method not in READ_METHODS:
            return _not_allowed("GET")
        if path in ("/", "/index.html"):
            return static_file("index.html")  # type: ignore[return-value]
        if path.startswith("/static/"):
            return static_file(path[len("/static/"):]) or error_page(404, f"no file {path}")
        if path.startswith("/api/"):
            return self.api(request, path[len("/api/"):])
        return error_page(404, f"no page {path}")

    # -- /metrics ------------------------------------------------------------------------
    def metrics(self, request: Request) -> Response:
        """The exposition prometheus_client's own server gives: OpenMetrics when asked for, ``name[]`` filters."""
        encoder, content_type = choose_encoder(request.headers.get("Accept") or "")
        registry: Any = self.server.metrics.registry
        names = request.query.get("name[]")
        if names:
            registry = _Only(registry, set(names))
        return Response(200, encoder(registry), content_type)

    # -- sessions --------------------------------------------------------------------------
    def viewer(self, request: Request) -> Viewer | None:
        """Who asks (None: a login is needed and the request has no live session)."""
        auth = self.auth
        if auth is None:
            return Viewer(None)
        role = self.sessions.role(request.cookie(COOKIE))
        return None if role is None else Viewer(role, auth)

    def login(self, request: Request) -> Response:
        if self.auth is None:
            return json_response({"error": "this server runs without --auth: there is nothing to log in to"}, 400)
        if not _same_origin(request):
            return json_response({"error": "a login must come from the console's own page"}, 403)
        form = urllib.parse.parse_qs(request.body.decode("utf-8", "replace"), max_num_fields=4)
        user, password = (form.get("username") or [""])[0], (form.get("password") or [""])[0]
        if not user or not password:
            return json_response({"error": "give a role name and its password"}, 400)
        try:
            role = self._check(request.client, user, password)
        except AuthenticationError as e:
            return json_response({"error": str(e)}, 401)
        token = self.sessions.start(role)
        return json_response({"role": role}, 200,
                             (("Set-Cookie", session_cookie(token, int(self.sessions.max_age_seconds))),))

    def _check(self, client: str, user: str, password: str) -> str:
        """The password checked by the server's LoginGuard on its loop (the CQL port's bound and waits)."""
        guard = self.server.login
        if self.loop is None:
            return guard.auth.authenticate(user, password)
        future = asyncio.run_coroutine_threadsafe(guard.login(client, user, password), self.loop)
        try:
            return future.result(30)
        except (TimeoutError, asyncio.TimeoutError):
            future.cancel()
            raise AuthenticationError("the login could not be checked in time; try again") from None

    def logout(self, request: Request) -> Response:
        self.sessions.end(request.cookie(COOKIE))
        return json_response({"role": None}, 200, (("Set-Cookie", session_cookie("", 0)),))

    # -- the JSON API ----------------------------------------------------------------------
    def api(self, request: Request, name: str) -> Response:
        viewer = self.viewer(request)
        if name == "session":
            return json_response({"auth": self.auth is not None, "role": viewer.role if viewer else None,
                                  "logged_in": viewer is not None})
        if viewer is None:
            return json_response({"error": "log in first", "login": True}, 401)
        route = ROUTES.get(name)
        if route is None:
            return json_response({"error": f"no API /api/{name}"}, 404)
        try:
            return json_response(route(self, request, viewer))
        except (records.BadRequest, UnknownTopic) as e:
            return json_response({"error": str(e)}, 400 if isinstance(e, records.BadRequest) else 404)
        except (LookupError, PermissionError) as e:
            return json_response({"error": e.args[0] if e.args else str(e)}, 404)

    def groups(self, viewer: Viewer) -> dict[str, Any]:
        return groups_mod.snapshot(self.broker, self.loop, viewer.may_select)


@dataclass(frozen=True)
class _Only:
    """The families of ``registry`` with a sample named in ``names`` (``/metrics?name[]=...``)."""

    registry: Any
    names: set[str]

    def collect(self) -> Any:
        for family in self.registry.collect():
            samples = [s for s in family.samples if s.name in self.names]
            if samples:
                family.samples = samples
                yield family


def _not_allowed(allow: str) -> Response:
    r = error_page(405, f"the console is read-only: only {allow} is answered here")
    return Response(r.status, r.body, r.content_type, (("Allow", allow),))


def _same_origin(request: Request) -> bool:
    """A browser's POST names its page's origin; it must be this host (no login from another site's page)."""
    origin = request.headers.get("Origin")
    if origin is None or origin == "null":
        return origin is None
    return urllib.parse.urlsplit(origin).netloc == (request.headers.get("Host") or "")


def _need(request: Request, *names: str) -> list[str]:
    out = []
    for name in names:
        value = request.arg(name)
        if not value:
            raise records.BadRequest(f"the {name} parameter is missing")
        out.append(value)
    return out


def _table(c: Console, request: Request, viewer: Viewer) -> Any:
    ks, table = _need(request, "ks", "table")
    if not viewer.may_select(ks, table):
        raise LookupError(f"no table {ks}.{table}")  # as if absent: its name is not revealed
    return ks, table


def _feed(c: Console, request: Request, viewer: Viewer) -> str:
    (path,) = _need(request, "path")
    reader = c.server.db.changefeeds
    topic = reader.describe(path)
    if not viewer.may_select(topic.keyspace, topic.table):
        raise UnknownTopic(f"no changefeed {path}")
    return topic.path


def _records(c: Console, request: Request, viewer: Viewer) -> Any:
    path = _feed(c, request, viewer)
    return records.feed_page(c.server.db.changefeeds, path, request.arg("partition"), request.arg("from", "end") or "end",
                             request.arg("value"), request.arg("key", "") or "", records.page_size(request.arg("limit")),
                             request.arg("cursor"))


def _log(c: Console, request: Request, viewer: Viewer) -> Any:
    ks, name = _table(c, request, viewer)
    db = c.server.db
    table = views.find_table(db, ks, name)
    from logtide.cdc.log_schema import log_name

    log_table = db.catalog.keyspaces[ks].tables.get(log_name(name))
    if log_table is None:
        raise records.BadRequest(f"{ks}.{name} has no CDC log (CDC is not enabled)")
    if not viewer.may_select(ks, log_table.name):
        raise LookupError(f"no CDC log for {ks}.{name}")
    return records.log_page(db, ks, table, log_table, request.arg("from", "end") or "end", request.arg("value"),
                            request.arg("key", "") or "", records.page_size(request.arg("limit")),
                            request.arg("cursor"))


ROUTES: dict[str, Callable[[Console, Request, Viewer], Any]] = {
    "overview": lambda c, r, v: views.overview(c.server, c.started, c.broker),
    "tables": lambda c, r, v: views.tables(c.server.db, v.may_select),
    "table": lambda c, r, v: views.table(c.server.db, *_table(c, r, v)),
    "changefeeds": lambda c, r, v: views.changefeeds(c.server.db, v.may_select),
    "changefeed": lambda c, r, v: views.changefeed(c.server.db, _feed(c, r, v), c.groups(v)),
    "consumers": lambda c, r, v: views.consumers(c.server.db, v.may_select, c.groups(v)),
    "records": _records,
    "log": _log,
}
