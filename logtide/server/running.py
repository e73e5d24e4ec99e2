"""Ways to run a Server: in the foreground until SIGINT/SIGTERM, or on a background thread."""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from dataclasses import replace
from typing import Any, Callable

from .limits import ConnectionSlots, default_fd_reserve, plan_descriptors
from .server import Server, ServerConfig

log = logging.getLogger("logtide.server")


def serve_until_signalled(db: Any, config: ServerConfig, on_started: Callable[[Server], None] | None = None,
                          kafka: Any = None) -> None:
    """Serve ``db`` in this thread until SIGINT or SIGTERM, then stop cleanly and close ``db``.

    With ``kafka`` (a logtide.kafka.KafkaConfig) the Kafka endpoint serves the changefeed topics beside it.
    """

    async def main() -> None:
        slots, kafka_config = shared_limits(config, kafka)
        server = Server(db, config, close_db=True, slots=slots)
        await server.start()
        try:
            broker = await start_kafka(db, kafka_config, slots, server.login)
        except BaseException:
            await server.stop()  # closes db
            raise
        server.kafka = broker
        loop = asyncio.get_running_loop()
        stopping: list[asyncio.Task] = []

        def on_signal(signum: int) -> None:
            if not stopping:
                log.info("received %s: stopping (finishing statements in flight)", signal.Signals(signum).name)
                # a repeated signal must not kill the process half-way through closing storage, also
                # after the loop (and with it these handlers) is gone
                for s in (signal.SIGINT, signal.SIGTERM):
                    signal.signal(s, signal.SIG_IGN)
                stopping.append(loop.create_task(stop_all(server, broker)))

        def handler(signum: int, _frame: Any) -> None:
            loop.call_soon_threadsafe(on_signal, signum)

        # plain signal handlers rather than loop.add_signal_handler: the loop would restore the
        # default action when it closes, and a late signal would then kill a cleanly stopping process
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, handler)
        if on_started is not None:
            try:
                on_started(server)
            except BaseException:  # the metrics endpoint could not start: stop cleanly, then say why
                await stop_all(server, broker)
                raise
        await server.wait_stopped()
        log.info("stopped")

    asyncio.run(main())


def shared_limits(config: ServerConfig, kafka: Any) -> tuple[ConnectionSlots, Any]:
    """One connection cap for the CQL port and the Kafka endpoint, after the descriptors storage needs:
    the CQL workers' and committer's readers and a margin, the Kafka endpoint's reader threads and as
    many of its long-poll threads as fit (``limits.plan_descriptors``); the Kafka config with those."""
    reserve = default_fd_reserve(config.workers) if config.fd_reserve is None else config.fd_reserve
    plan = plan_descriptors(config.max_connections, reserve, kafka.reader_threads if kafka else 0,
                            kafka.wait_threads if kafka else 0)
    if kafka is not None and plan.wait_threads < kafka.wait_threads:
        log.info("Kafka endpoint: %d threads for long-poll Fetch waits, not %d: the open file limit (ulimit -n) "
                 "leaves room for no more", plan.wait_threads, kafka.wait_threads)
        kafka = replace(kafka, wait_threads=plan.wait_threads)
    return ConnectionSlots(plan.connections), kafka


async def start_kafka(db: Any, kafka: Any, slots: ConnectionSlots | None = None, login: Any = None) -> Any:
    """Start the Kafka endpoint over ``db.changefeeds`` (None when not configured or not available)."""
    if kafka is None:
        return None
    reader = getattr(db, "changefeeds", None)
    if reader is None:
        log.warning("Kafka endpoint not started: this build has no changefeed topic reader")
        return None
    from logtide.kafka import KafkaBroker

    broker = KafkaBroker(reader, kafka, getattr(db, "auth", None), slots=slots, login=login)
    try:
        host, port = await broker.start()
    except OSError as e:  # taken since logtide serve checked it
        from .startup import PortSetting, StartupError

        raise StartupError(PortSetting("--kafka-port", kafka.host, kafka.port, True).refused(e)) from None
    shown = f"[{host}]" if ":" in host else host
    advertised = broker.advertised[0]
    log.info("Kafka endpoint on %s:%d (changefeed topics; %sSASL %s)", shown, port,
             "" if advertised == host else f"advertised as {advertised}; ",
             "required" if broker.auth_required else "off")
    return broker


async def stop_all(server: Server, broker: Any) -> None:
    if broker is not None:
        await broker.stop()
    await server.stop()


class BackgroundServer:
    """A Server running on its own event loop in a daemon thread (tests, benchmarks, embedding)."""

    def __init__(self, db: Any, config: ServerConfig | None = None, close_db: bool = False) -> None:
        self.server = Server(db, config or ServerConfig(port=0), close_db=close_db)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="logtide-cql-server", daemon=True)

    @property
    def host(self) -> str:
        assert self.server.address is not None
        return self.server.address[0]

    @property
    def port(self) -> int:
        assert self.server.address is not None
        return self.server.address[1]

    def start(self, timeout: float = 30) -> "BackgroundServer":
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start(), self._loop).result(timeout)
        return self

    def stop(self, timeout: float = 60) -> None:
        if not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self.server.stop(), self._loop).result(timeout)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)
        self._loop.close()

    def call(self, fn: Callable[[], Any], timeout: float = 30) -> Any:
        """Run ``fn`` on the server's loop and return its result."""

        async def run() -> Any:
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout)

    def stats(self) -> dict[str, int]:
        return self.call(self.server.stats)

    def __enter__(self) -> "BackgroundServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
