"""One rule for ``logtide serve``'s three ports (``--port``, ``--kafka-port``, ``--metrics-port``; docs/server.md,
"Ports"): a taken port is fatal, named with the option to change, before the data directory is created; 0 (or
``auto``) is any free port, shown in the start-up lines; ``off`` turns Kafka or metrics off, never CQL; a config
file takes the same values."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import urllib.request
from contextlib import contextmanager
from typing import Iterator

import pytest

from ..server.conftest import cluster
from .serving import ServeProcess

KAFKA = re.compile(r"Kafka endpoint on 127\.0\.0\.1:(\d+)")


def serve(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "logtide", "serve", *args], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)


@contextmanager
def taken_port() -> Iterator[int]:
    """A loopback port another program listens on."""
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        yield other.getsockname()[1]


def one_line(done: subprocess.CompletedProcess) -> str:
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    return lines[0]


@pytest.mark.parametrize("flag, others", [
    ("--port", ["--kafka-port", "off", "--metrics-port", "off"]),
    ("--kafka-port", ["--port", "0", "--metrics-port", "off"]),
    ("--metrics-port", ["--port", "0", "--kafka-port", "off"]),
])
def test_a_taken_port_is_fatal_names_the_option_and_creates_nothing(tmp_path, flag, others):
    data = tmp_path / "data"
    with taken_port() as busy:
        line = one_line(serve("--data-dir", str(data), *others, flag, str(busy)))
    expected = f"logtide serve: error: cannot listen on 127.0.0.1:{busy} (address already in use): " \
               f"choose another port with {flag}"
    assert line == expected + ("" if flag == "--port" else f", or {flag} off")
    assert not data.exists()


def test_two_servers_given_the_same_port_are_refused_before_anything_is_created(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        same = str(s.getsockname()[1])
    data = tmp_path / "data"
    line = one_line(serve("--data-dir", str(data), "--port", same, "--kafka-port", same, "--metrics-port", "off"))
    assert f"cannot listen on 127.0.0.1:{same} (address already in use): choose another port with --kafka-port" in line
    assert not data.exists()


def test_zero_and_auto_are_any_free_port_for_all_three_and_the_start_up_lines_name_them(tmp_path):
    with ServeProcess([sys.executable, "-m", "logtide", "serve", "--data-dir", str(tmp_path), "--synchronous", "OFF",
                       "--port", "auto", "--kafka-port", "0", "--metrics-port", "0"]) as srv:
        port = srv.wait_listening()
        assert port != 0 and srv.metrics_url is not None and not srv.metrics_url.endswith(":0/metrics")
        with urllib.request.urlopen(srv.metrics_url, timeout=30) as r:
            assert b"logtide_cql_requests_total" in r.read()
        c = cluster(port)
        assert c.connect().execute("SELECT release_version FROM system.local").one()
        c.shutdown()
        kafka = KAFKA.search(srv.output())
        assert kafka is not None and int(kafka.group(1)) not in (0, port), srv.output()
        socket.create_connection(("127.0.0.1", int(kafka.group(1))), timeout=10).close()
        assert srv.stop() == 0


def test_off_turns_kafka_and_metrics_off_and_is_refused_for_cql(tmp_path):
    with ServeProcess([sys.executable, "-m", "logtide", "serve", "--data-dir", str(tmp_path), "--port", "0",
                       "--kafka-port", "off", "--metrics-port", "OFF"]) as srv:
        srv.wait_listening()
        assert srv.metrics_url is None and "metrics off" in srv.output()
        assert srv.stop() == 0
    assert "Kafka endpoint" not in srv.output()
    line = one_line(serve("--data-dir", str(tmp_path / "d"), "--port", "off"))
    assert line == ("logtide serve: error: argument --port: CQL cannot be off: it is the server (0 or auto picks a "
                    "free port) (see logtide serve --help)")
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize("flag", ["--port", "--kafka-port", "--metrics-port"])
@pytest.mark.parametrize("value, problem", [("70000", "port 70000 is out of range"), ("nine", "'nine' is not a port")])
def test_a_bad_port_value_is_named(tmp_path, flag, value, problem):
    line = one_line(serve("--data-dir", str(tmp_path / "d"), flag, value))
    assert f"argument {flag}: {problem}: give 0 to 65535 (0 or auto: a free port) or off" in line


def test_a_config_file_takes_the_same_port_values(tmp_path):
    config = tmp_path / "logtide.toml"
    config.write_text('port = "auto"\nkafka_port = "off"\nmetrics_port = 0\nsynchronous = "OFF"\n')
    with ServeProcess([sys.executable, "-m", "logtide", "serve", "--data-dir", str(tmp_path / "d"),
                       "--config", str(config)]) as srv:
        assert srv.wait_listening() != 0
        assert srv.metrics_url is not None and not srv.metrics_url.endswith(":0/metrics")
        assert srv.stop() == 0
    assert "Kafka endpoint" not in srv.output()
    config.write_text('port = "off"\n')
    line = one_line(serve("--data-dir", str(tmp_path / "e"), "--config", str(config)))
    assert line == 'logtide serve: error: port = "off" is refused: CQL is the server (0 or "auto" picks a free port)'
    config.write_text("metrics_port = 99999\n")
    line = one_line(serve("--data-dir", str(tmp_path / "e"), "--config", str(config)))
    assert (f"setting 'metrics_port' in {config} must be a port number (0 to 65535; 0 picks a free one), \"auto\" "
            "(the same as 0) or \"off\", got 99999") in line
    with taken_port() as busy:
        config.write_text(f"port = 0\nkafka_port = {busy}\n")
        line = one_line(serve("--data-dir", str(tmp_path / "e"), "--config", str(config), "--metrics-port", "off"))
    assert line.endswith(f"cannot listen on 127.0.0.1:{busy} (address already in use): choose another port with "
                         "--kafka-port, or --kafka-port off")
    assert not (tmp_path / "e").exists()
