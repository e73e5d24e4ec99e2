"""``logtide pipeline`` jobs take their login without a password on the command line (docs/spark.md "Logins"):
from LOGTIDE_CQL_* / LOGTIDE_KAFKA_* variables, from cqlsh's credentials file (refused when others may read it),
from a prompt on a terminal; a password written in a URL draws a warning.  Each job runs against a real
``logtide serve --auth`` with a stand-in ``pyspark`` (as ``test_before_spark.py``): a job whose login was
accepted passes its checks against the server and then imports pyspark, which the stand-in records; a refused
login stops it before."""

from __future__ import annotations

import fcntl
import os
import pty
import subprocess
import sys
import select
import termios
import time

import pytest
from cassandra.auth import PlainTextAuthProvider

from .conftest import KEYSPACE_DDL, cluster, serve
from .test_before_spark import STAND_IN
from .test_changefeed_source import kafka_port

pytestmark = pytest.mark.long_running(seconds=50)  # Spark jobs run as commands: handed out first (tests/conftest.py)

USER, PASSWORD = "etl", "s3cret pw"
REACHED_SPARK = "pyspark was imported"


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    """A server requiring logins (CQL and Kafka SASL/PLAIN) holding ks.t with a CDC log and a changefeed f."""
    d = tmp_path_factory.mktemp("logins")
    (d / "pw").write_text(PASSWORD + "\n")
    srv = serve(d / "data", "--auth", "--superuser", USER, "--superuser-password-file", str(d / "pw"),
                "--kafka-port", "auto")
    srv.kafka = f"127.0.0.1:{kafka_port(srv)}"
    c = cluster(srv.port, auth_provider=PlainTextAuthProvider(USER, PASSWORD))
    s = c.connect()
    s.execute(KEYSPACE_DDL.format("ks"))
    s.execute("CREATE TABLE ks.t (pk int, ck int, v text, PRIMARY KEY (pk, ck)) WITH cdc = {'enabled': true}")
    s.execute("ALTER TABLE ks.t ADD CHANGEFEED f WITH (MODE = 'NEW_IMAGE', FORMAT = 'JSON')")
    s.execute("INSERT INTO ks.t (pk, ck, v) VALUES (1, 1, 'a')")
    c.shutdown()
    yield srv
    srv.stop()


def job_env(tmp_path, **variables: str) -> dict[str, str]:
    """The environment of a job: a stand-in pyspark, an empty HOME (no credentials file of the machine's user),
    none of the test runner's LOGTIDE_* login variables, and ``variables``."""
    stand_in = tmp_path / "stand-in"
    (stand_in / "pyspark").mkdir(parents=True, exist_ok=True)
    (stand_in / "pyspark" / "__init__.py").write_text(STAND_IN)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOGTIDE_CQL_", "LOGTIDE_KAFKA_"))
           and k != "LOGTIDE_CREDENTIALS"}
    return {**env, "PYTHONPATH": os.pathsep.join([str(stand_in), os.environ.get("PYTHONPATH", "")]),
            "LOGTIDE_TEST_PYSPARK_IMPORTED": str(tmp_path / "pyspark-imported"), "HOME": str(home), **variables}


def replicate_argv(srv, tmp_path, source_login: str = "", target_login: str = "", *more: str) -> list[str]:
    here = f"127.0.0.1:{srv.port}"
    return [sys.executable, "-m", "logtide", "pipeline", "replicate", "--source", f"cql://{source_login}{here}/ks.t",
            "--target", f"cql://{target_login}{here}/ks.copy", "--checkpoint", str(tmp_path / "ckpt"), *more]


def run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    """A job without a terminal (standard input is /dev/null)."""
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300, stdin=subprocess.DEVNULL)


def reached_spark(done: subprocess.CompletedProcess, tmp_path) -> bool:
    """Whether the job passed its checks against the server (its logins accepted) and went on to start Spark."""
    assert "Traceback" not in done.stderr, done.stderr
    reached = (tmp_path / "pyspark-imported").exists()
    if reached:
        (tmp_path / "pyspark-imported").unlink()
        assert REACHED_SPARK in done.stderr
    return reached


def write_credentials(path, text: str, mode: int = 0o600):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


def test_the_login_comes_from_the_environment_variables(secured, tmp_path):
    env = job_env(tmp_path, LOGTIDE_CQL_USERNAME=USER, LOGTIDE_CQL_PASSWORD=PASSWORD)
    done = run(replicate_argv(secured, tmp_path), env)
    assert reached_spark(done, tmp_path), done.stderr
    assert "warning" not in done.stderr
    # the user in the URL, the password from the environment
    done = run(replicate_argv(secured, tmp_path, f"{USER}@", f"{USER}@"),
               job_env(tmp_path, LOGTIDE_CQL_PASSWORD=PASSWORD))
    assert reached_spark(done, tmp_path), done.stderr
    wrong = run(replicate_argv(secured, tmp_path), {**env, "LOGTIDE_CQL_PASSWORD": "wrong"})
    assert not reached_spark(wrong, tmp_path) and wrong.returncode == 2
    assert wrong.stderr.strip() == (f"logtide pipeline replicate: error: cannot connect to 127.0.0.1:{secured.port}: "
                                    f"login refused (Provided username {USER} and/or password are incorrect): check "
                                    f"the options username and password")


def test_the_login_comes_from_cqlshs_credentials_file(secured, tmp_path):
    env = job_env(tmp_path)
    write_credentials(tmp_path / "home" / ".cassandra" / "credentials",
                      f"[PlainTextAuthProvider]\nusername = {USER}\npassword = {PASSWORD}\n")
    assert reached_spark(run(replicate_argv(secured, tmp_path), env), tmp_path)  # cqlsh's default place
    named = write_credentials(tmp_path / "creds.ini",
                              f"[PlainTextAuthProvider]\nusername={USER}\npassword={PASSWORD}\n")
    (tmp_path / "home" / ".cassandra" / "credentials").unlink()
    assert reached_spark(run(replicate_argv(secured, tmp_path, "", "", "--credentials", str(named)), env), tmp_path)
    assert reached_spark(run(replicate_argv(secured, tmp_path), {**env, "LOGTIDE_CREDENTIALS": str(named)}), tmp_path)
    # the environment wins over the file, the URL over both
    wrong = write_credentials(tmp_path / "wrong.ini", f"[PlainTextAuthProvider]\nusername={USER}\npassword=wrong%\n")
    argv = replicate_argv(secured, tmp_path, "", "", "--credentials", str(wrong))
    assert not reached_spark(run(argv, env), tmp_path)
    assert reached_spark(run(argv, {**env, "LOGTIDE_CQL_PASSWORD": PASSWORD}), tmp_path)
    # the target's own file
    argv = replicate_argv(secured, tmp_path, "", "", "--credentials", str(named), "--target-credentials", str(wrong))
    done = run(argv, env)
    assert not reached_spark(done, tmp_path) and "login refused" in done.stderr


def test_a_credentials_file_others_may_read_is_refused_in_one_line(secured, tmp_path):
    env = job_env(tmp_path)
    shared = write_credentials(tmp_path / "home" / ".cassandra" / "credentials",
                               f"[PlainTextAuthProvider]\nusername={USER}\npassword={PASSWORD}\n", 0o644)
    done = run(replicate_argv(secured, tmp_path), env)
    assert not reached_spark(done, tmp_path) and done.returncode == 2
    assert done.stderr == (f"logtide pipeline replicate: error: credentials file {shared} may be read by group and "
                           f"others (mode 0644): it must be yours and private, as cqlsh requires "
                           f"(chmod 600 {shared})\n")
    shared.chmod(0o640)
    assert "may be read by group (mode 0640)" in run(replicate_argv(secured, tmp_path), env).stderr
    missing = run(replicate_argv(secured, tmp_path, "", "", "--credentials", str(tmp_path / "none")), env)
    assert missing.stderr == (f"logtide pipeline replicate: error: cannot read credentials file {tmp_path / 'none'}: "
                              f"No such file or directory\n")
    garbled = write_credentials(tmp_path / "garbled", "username = etl\n")
    done = run(replicate_argv(secured, tmp_path, "", "", "--credentials", str(garbled)), env)
    assert done.stderr.startswith(f"logtide pipeline replicate: error: credentials file {garbled} is not an INI file "
                                  f"with a [PlainTextAuthProvider] section: ")
    assert len(done.stderr.splitlines()) == 1


def test_a_password_in_the_url_draws_a_warning(secured, tmp_path):
    done = run(replicate_argv(secured, tmp_path, f"{USER}:{PASSWORD.replace(' ', '%20')}@", f"{USER}@"),
               job_env(tmp_path, LOGTIDE_CQL_PASSWORD=PASSWORD))
    assert reached_spark(done, tmp_path), done.stderr
    assert done.stderr.splitlines()[0] == (
        "logtide pipeline replicate: warning: --source carries a password, which other users see in `ps` and which "
        "stays in the shell's history: use LOGTIDE_CQL_PASSWORD, a credentials file (~/.cassandra/credentials, mode "
        "600) or the prompt instead")
    assert "--target carries" not in done.stderr and PASSWORD not in done.stderr


def test_without_a_terminal_a_missing_password_is_an_error_naming_its_sources(secured, tmp_path):
    done = run(replicate_argv(secured, tmp_path, f"{USER}@"), job_env(tmp_path))
    assert not reached_spark(done, tmp_path) and done.returncode == 2
    assert done.stderr == (f"logtide pipeline replicate: error: --source: no password for user {USER}: set "
                           f"LOGTIDE_CQL_PASSWORD, put it in a credentials file (~/.cassandra/credentials or "
                           f"--credentials FILE, section [PlainTextAuthProvider], mode 600), or run the command on a "
                           f"terminal to be asked for it\n")
    alone = run(replicate_argv(secured, tmp_path), job_env(tmp_path, LOGTIDE_CQL_PASSWORD=PASSWORD))
    assert alone.stderr == ("logtide pipeline replicate: error: --source: a password is given (LOGTIDE_CQL_PASSWORD) "
                            "but no user name: put it in the URL (USER@HOST), LOGTIDE_CQL_USERNAME or the credentials "
                            "file\n")


def run_on_terminal(argv: list[str], env: dict[str, str], answers: list[str],
                    timeout: float = 300) -> tuple[int, str]:
    """Run a job on a pseudo-terminal that is its controlling terminal (as a shell's), typing each answer after
    each ``Password for`` prompt: (exit status, what the terminal showed)."""
    leader, follower = pty.openpty()
    shown = bytearray()

    def controlling_terminal() -> None:
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(argv, stdin=follower, stdout=follower, stderr=follower, env=env,
                            preexec_fn=controlling_terminal)
    os.close(follower)
    deadline, typed = time.monotonic() + timeout, 0
    try:
        while time.monotonic() < deadline:
            if typed < len(answers) and shown.count(b"Password for") > typed:
                os.write(leader, answers[typed].encode() + b"\n")
                typed += 1
            if not select.select([leader], [], [], 0.2)[0]:
                continue
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the job ended and closed the terminal
                break
            if not chunk:
                break
            shown.extend(chunk)
        code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        os.close(leader)
        if proc.poll() is None:  # a job stuck past the deadline: the test fails, the job does not outlive it
            proc.kill()
            proc.wait()
    return code, shown.decode(errors="replace")


def test_a_missing_password_is_asked_for_on_the_terminal(secured, tmp_path):
    code, shown = run_on_terminal(replicate_argv(secured, tmp_path, f"{USER}@", f"{USER}@"), job_env(tmp_path),
                                  [PASSWORD, PASSWORD])
    assert f"Password for {USER} (--source): " in shown and f"Password for {USER} (--target): " in shown
    assert PASSWORD not in shown  # not echoed
    assert REACHED_SPARK in shown and (tmp_path / "pyspark-imported").exists(), shown
    (tmp_path / "pyspark-imported").unlink()
    code, shown = run_on_terminal(replicate_argv(secured, tmp_path, f"{USER}@", f"{USER}@"), job_env(tmp_path),
                                  ["wrong", "wrong"])
    assert code == 2 and "login refused" in shown and not (tmp_path / "pyspark-imported").exists()


def lakehouse_argv(srv, tmp_path, login: str = "", *more: str) -> list[str]:
    return [sys.executable, "-m", "logtide", "pipeline", "lakehouse", "--source", f"kafka://{login}{srv.kafka}/ks/t/f",
            "--cql-port", str(srv.port), "--target", str(tmp_path / "target"), "--format", "parquet", *more]


def test_the_lakehouse_job_takes_its_kafka_login_from_the_environment_or_the_file(secured, tmp_path):
    env = job_env(tmp_path, LOGTIDE_KAFKA_USERNAME=USER, LOGTIDE_KAFKA_PASSWORD=PASSWORD)
    done = run(lakehouse_argv(secured, tmp_path), env)
    assert reached_spark(done, tmp_path), done.stderr
    assert "warning" not in done.stderr
    named = write_credentials(tmp_path / "creds", f"[PlainTextAuthProvider]\nusername={USER}\npassword={PASSWORD}\n")
    assert reached_spark(run(lakehouse_argv(secured, tmp_path, "", "--credentials", str(named)), job_env(tmp_path)),
                         tmp_path)
    warned = run(lakehouse_argv(secured, tmp_path, f"{USER}:{PASSWORD.replace(' ', '%20')}@"), job_env(tmp_path))
    assert reached_spark(warned, tmp_path), warned.stderr
    assert warned.stderr.startswith("logtide pipeline lakehouse: warning: --source carries a password, which other "
                                    "users see in `ps` and which stays in the shell's history: use "
                                    "LOGTIDE_KAFKA_PASSWORD, ")
    wrong = run(lakehouse_argv(secured, tmp_path), {**env, "LOGTIDE_KAFKA_PASSWORD": "wrong"})
    assert not reached_spark(wrong, tmp_path) and wrong.returncode == 2 and "login refused" in wrong.stderr
    assert len(wrong.stderr.splitlines()) == 1
