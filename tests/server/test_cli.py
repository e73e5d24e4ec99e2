"""``logtide serve`` as a process: startup logs and checks, auth bootstrap, config file, TLS, clean stop."""

from __future__ import annotations

import signal
import ssl
import subprocess
import sys
import time

import pytest
from cassandra.auth import PlainTextAuthProvider

import logtide

from .conftest import KEYSPACE_DDL, cluster

from ..ops.serving import certificate_or_skip
from .serveproc import LISTENING, Serve  # noqa: F401


def test_serve_logs_address_and_data_dir_and_stops_cleanly_on_sigterm(tmp_path):
    data = tmp_path / "data"
    with Serve("--data-dir", str(data), "--synchronous", "NORMAL") as srv:
        port = srv.wait_listening()
        out = srv.output()
        assert f"listening on 127.0.0.1:{port}" in out
        assert f"data directory {data}" in out
        c = cluster(port)
        s = c.connect()
        s.execute(KEYSPACE_DDL.format("cli"))
        s.execute("CREATE TABLE cli.t (k int PRIMARY KEY, v int)")
        insert = s.prepare("INSERT INTO cli.t (k, v) VALUES (?, ?)")
        futures = [s.execute_async(insert, (i, i)) for i in range(300)]
        time.sleep(0.05)
        srv.proc.send_signal(signal.SIGTERM)  # while writes are in flight
        acknowledged = 0
        for f in futures:
            try:
                f.result()
                acknowledged += 1
            except Exception:  # refused after the stop began: the connection closed
                pass
        assert srv.stop() == 0
        c.shutdown()
        assert "stopping (finishing statements in flight)" in srv.output()
        assert srv.output().rstrip().endswith("stopped")
    with logtide.open(data) as db:  # the data directory was released; every acknowledged write is there
        count = db.session().execute("SELECT count(*) FROM cli.t").one()[0]
    assert count >= acknowledged > 0


def test_auth_without_superuser_or_roles_is_a_startup_error(tmp_path):
    done = subprocess.run([sys.executable, "-m", "logtide", "serve", "--data-dir", str(tmp_path / "d"), "--auth"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "no role can log in" in done.stderr and "--superuser" in done.stderr


def test_superuser_needs_its_password_file(tmp_path):
    done = subprocess.run([sys.executable, "-m", "logtide", "serve", "--data-dir", str(tmp_path / "d"),
                           "--superuser", "admin"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "go together" in done.stderr


def test_data_directory_in_use_is_a_startup_error(tmp_path):
    data = str(tmp_path / "data")
    with Serve("--data-dir", data) as first:
        first.wait_listening()
        done = subprocess.run([sys.executable, "-m", "logtide", "serve", "--data-dir", data, "--port", "0"],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and "cannot open data directory" in done.stderr
        assert first.stop(signal.SIGINT) == 0


def test_config_file_with_auth_and_tls(tmp_path):
    cert, key = certificate_or_skip(tmp_path)
    password = tmp_path / "pw"
    password.write_text("pa ss\n")
    config = tmp_path / "logtide.toml"
    config.write_text(f'data_dir = "{tmp_path / "data"}"\nport = 0\nauth = true\nsuperuser = "root"\n'
                      f'superuser_password_file = "{password}"\ntls_cert = "{cert}"\ntls_key = "{key}"\n')
    with Serve("--config", str(config)) as srv:
        port = srv.wait_listening()
        assert "TLS on; authentication on" in srv.output()
        assert f"data directory {tmp_path / 'data'}" in srv.output()
        ctx = ssl.create_default_context(cafile=str(cert))
        ctx.check_hostname = False
        c = cluster(port, ssl_context=ctx, auth_provider=PlainTextAuthProvider("root", "pa ss"))
        s = c.connect()
        assert s.execute("SELECT cluster_name FROM system.local").one().cluster_name == "logtide"
        c.shutdown()
        assert srv.stop() == 0


def test_config_file_errors(tmp_path):
    config = tmp_path / "bad.toml"
    config.write_text("prot = 9042\n")
    done = subprocess.run([sys.executable, "-m", "logtide", "serve", "--config", str(config)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "unknown setting 'prot'" in done.stderr


def test_repeated_sigterm_does_not_kill_a_stopping_server(tmp_path):
    with Serve("--data-dir", str(tmp_path / "data")) as srv:
        srv.wait_listening()
        for _ in range(5):
            srv.proc.send_signal(signal.SIGTERM)
            time.sleep(0.01)
        assert srv.stop() == 0
        assert "stopped" in srv.output()
