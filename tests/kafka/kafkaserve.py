"""A real ``logtide serve`` process with its Kafka endpoint, and what its tests need around it."""

from __future__ import annotations

import re
import resource
from pathlib import Path
from typing import Any, Callable

from tests.server.conftest import KEYSPACE_DDL, cluster
from tests.server.serveproc import Serve
from tests.server.test_prelogin_limits import rss_bytes  # noqa: F401  (re-exported for the Kafka tests)

KAFKA = re.compile(r"Kafka endpoint on (\S+):(\d+)")
ADMIN, ADMIN_PW = "admin", "admin pw"


def password_file(tmp_path: Path, password: str = ADMIN_PW) -> str:
    path = tmp_path / "admin.password"
    path.write_text(password + "\n")
    return str(path)


def auth_args(tmp_path: Path) -> list[str]:
    """``--auth`` with the bootstrap superuser ``admin`` / ``admin pw``."""
    return ["--auth", "--superuser", ADMIN, "--superuser-password-file", password_file(tmp_path)]


class KafkaServe(Serve):
    """``logtide serve --kafka-port auto ARGS``: ``port`` (CQL) and ``kafka_port`` once it listens."""

    def __init__(self, data_dir: Path, *args: str, **popen: Any) -> None:
        super().__init__("--data-dir", str(data_dir), "--synchronous", "OFF", "--kafka-port", "auto", *args, **popen)
        self.kafka_port = 0

    def wait_listening(self, timeout: float = 60) -> int:
        port = super().wait_listening(timeout)
        line = next((x for x in self.lines if KAFKA.search(x)), None)
        assert line is not None, self.output()
        m = KAFKA.search(line)
        assert m is not None
        self.kafka_port = int(m.group(2))
        return port


def limit_descriptors(n: int) -> Callable[[], None]:
    """A ``preexec_fn`` giving the child ``ulimit -n N``."""
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
    return apply


def make_feed(port: int, table: str = "t", auth: tuple[str, str] | None = None, rows: int = 0) -> None:
    """Keyspace ``ks`` (if missing), ``ks.TABLE (id int PRIMARY KEY, v text)`` with changefeed ``feed``
    (JSON, two partitions) and ``rows`` rows written, over CQL."""
    from cassandra.auth import PlainTextAuthProvider
    c = cluster(port, auth_provider=PlainTextAuthProvider(*auth) if auth else None)
    s = c.connect()
    s.execute(KEYSPACE_DDL.format("IF NOT EXISTS ks"))
    s.execute(f"CREATE TABLE ks.{table} (id int PRIMARY KEY, v text)")
    s.execute(f"ALTER TABLE ks.{table} ADD CHANGEFEED feed WITH (MODE = 'NEW_IMAGE', FORMAT = 'JSON', "
              "TOPIC_MIN_ACTIVE_PARTITIONS = 2)")
    insert = s.prepare(f"INSERT INTO ks.{table} (id, v) VALUES (?, ?)")
    for i in range(rows):
        s.execute(insert, (i, f"row {i}"))
    c.shutdown()
