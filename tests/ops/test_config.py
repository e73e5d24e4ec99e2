"""One TOML config file for every subcommand; clear messages for bad settings, TLS files and open hosts."""

from __future__ import annotations

import subprocess
import sys

import pytest

import logtide
from logtide.cli import main
from logtide.version import package_version

from .serving import ServeProcess, certificate_or_skip


def run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "logtide", *argv], capture_output=True, text=True, timeout=120)


def test_the_config_file_of_serve_works_for_other_subcommands(tmp_path, capsys):
    data = tmp_path / "data"
    config = tmp_path / "logtide.toml"
    config.write_text(f'data_dir = "{data}"\nvnodes = 3\nshards = 1\nhost = "127.0.0.1"\nport = 0\n')
    assert main(["shell", "--config", str(config), "-e",
                 "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};"
                 "CREATE TABLE ks.t (pk int PRIMARY KEY) WITH cdc = {'enabled': true}"]) == 0
    assert main(["status", "--config", str(config), "--interval", "0"]) == 0
    out = capsys.readouterr().out
    assert f"Data directory    : {data}" in out and "3 token ranges x 1 shards = 3 streams" in out
    assert main(["cdc", "streams", "ks.t", "--config", str(config)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1 + 3


def test_command_line_options_win_over_the_config_file(tmp_path, capsys):
    config = tmp_path / "logtide.toml"
    config.write_text(f'data_dir = "{tmp_path / "from-config"}"\n')
    other = tmp_path / "given"
    logtide.open(other).close()
    for argv in (["status", "--data-dir", str(other), "--config", str(config)],
                 ["status", "--config", str(config), "--data-dir", str(other)]):
        assert main([*argv, "--interval", "0"]) == 0
        assert f"Data directory    : {other}" in capsys.readouterr().out


@pytest.mark.parametrize("text, message", [
    ("vnodes = 'many'\n", "setting 'vnodes' in {path} must be an integer, got 'many'"),
    ("port = 9042.5\n", "setting 'port' in {path} must be a port number (0 to 65535; 0 picks a free one), "
                       '"auto" (the same as 0) or "off", got 9042.5'),
    ("auth = 'yes'\n", "setting 'auth' in {path} must be true or false, got 'yes'"),
    ("data_dir = 3\n", "setting 'data_dir' in {path} must be a string, got 3"),
    ("prot = 9042\n", "unknown setting 'prot' in {path}; known: "),
    ("port = \n", "invalid config file {path}: "),
])
def test_bad_settings_name_the_file_and_the_setting(tmp_path, capsys, text, message):
    config = tmp_path / "bad.toml"
    config.write_text(text)
    with pytest.raises(SystemExit) as exit:
        main(["status", "--config", str(config)])
    assert exit.value.code == 2
    assert message.format(path=config) in capsys.readouterr().err


def test_every_subcommand_reports_a_bad_config_file_alike(tmp_path):
    config = tmp_path / "bad.toml"
    config.write_text("workers = 'eight'\n")
    for command in ("serve", "shell", "replay"):
        done = run(command, "--config", str(config))
        assert done.returncode == 2
        assert f"setting 'workers' in {config} must be an integer, got 'eight'" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr


def test_a_missing_config_file_is_named(tmp_path):
    done = run("status", "--config", str(tmp_path / "nope.toml"))
    assert done.returncode == 2 and f"cannot read config file {tmp_path / 'nope.toml'}" in done.stderr


def test_integer_and_port_options_say_what_is_wrong(tmp_path):
    done = run("serve", "--data-dir", str(tmp_path), "--metrics-port", "x")
    assert done.returncode == 2 and "argument --metrics-port: 'x' is not a port" in done.stderr
    done = run("status", "--data-dir", str(tmp_path), "--vnodes", "1.5")
    assert done.returncode == 2 and "argument --vnodes: must be an integer, got '1.5'" in done.stderr


def test_tls_errors_name_the_file_that_could_not_be_loaded(tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    done = run("serve", "--data-dir", str(tmp_path / "d"), "--port", "0", "--metrics-port", "off",
               "--tls-cert", str(cert), "--tls-key", str(key))
    assert done.returncode == 2 and f"cannot read TLS certificate file {cert}: No such file" in done.stderr
    cert.write_text("not a certificate\n")
    key.write_text("not a key\n")
    done = run("serve", "--data-dir", str(tmp_path / "d"), "--port", "0", "--metrics-port", "off",
               "--tls-cert", str(cert), "--tls-key", str(key))
    assert done.returncode == 2 and f"cannot load TLS certificate {cert}: it holds no PEM certificate" in done.stderr


def test_tls_key_errors_name_the_key_file(tmp_path):
    cert, key = certificate_or_skip(tmp_path)
    key.write_text("garbage\n")
    done = run("serve", "--data-dir", str(tmp_path / "d"), "--port", "0", "--metrics-port", "off",
               "--tls-cert", str(cert), "--tls-key", str(key))
    assert done.returncode == 2 and f"cannot load TLS private key {key} for certificate {cert}" in done.stderr


def test_a_non_loopback_address_without_auth_logs_a_warning(tmp_path):
    with ServeProcess.logtide("--data-dir", str(tmp_path), "--host", "0.0.0.0") as srv:
        srv.wait_listening()
        assert "WARNING logtide.server: listening on 0.0.0.0 without --auth" in srv.output()
        assert srv.stop() == 0
    with ServeProcess.logtide("--data-dir", str(tmp_path)) as srv:
        srv.wait_listening()
        assert "without --auth" not in srv.output()
        assert srv.stop() == 0


def test_the_startup_line_names_the_version(tmp_path):
    with ServeProcess.logtide("--data-dir", str(tmp_path)) as srv:
        port = srv.wait_listening()
        assert f"logtide {package_version()} listening on 127.0.0.1:{port}" in srv.output()
        assert srv.stop() == 0
