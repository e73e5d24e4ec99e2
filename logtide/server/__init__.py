"""The CQL native-protocol server (``logtide serve``): protocol v3, v4 and v5 over asyncio.

Modules, each with one job:

* ``wire``         the protocol's primitive notations ([short], [string], [bytes] ...)
* ``frame``        frame headers, v5 segments with CRC24/CRC32, reading frames from a stream
* ``compression``  lz4 / snappy, when their libraries are installed
* ``datatypes``    type options and value encoding
* ``messages``     request decoding, response encoding
* ``prepared``     the prepared-statement cache
* ``statements``   QUERY / PREPARE / EXECUTE / BATCH against the engine
* ``connection``   one client: handshake, authentication, concurrent streams
* ``server``       listening, the worker pool, events, clean stop
* ``running``      foreground (signals) and background-thread runners
* ``cli``          the ``logtide serve`` subcommand
"""


from typing import Any

__all__ = ["BackgroundServer", "Server", "ServerConfig", "serve_until_signalled"]


def __getattr__(name: str) -> Any:
    """The names of ``__all__``, imported on first use (PEP 562): ``logtide status`` reads
    ``server.runtime_file`` without loading the server itself."""
    if name in ("BackgroundServer", "serve_until_signalled"):
        from . import running

        return getattr(running, name)
    if name in ("Server", "ServerConfig"):
        from . import server

        return getattr(server, name)
    raise AttributeError(f"module 'logtide.server' has no attribute {name!r}")
