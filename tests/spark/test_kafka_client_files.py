"""Kafka's own client files and ``cql://`` URLs with TLS settings (docs/spark.md "Kafka client files", "The
replication job"): ``logtide pipeline lakehouse --command-config client.properties`` logs in with the file's
``sasl.jaas.config`` (PlainLoginModule or ScramLoginModule) over its TLS settings, a login from the command line or
the environment wins over the file's, a malformed JAAS line or a Java trust store is one line naming it; ``logtide
pipeline replicate`` reaches a TLS server with ``?ssl=true&sslCaFile=...`` or the connector's names on either URL.
Each job runs against a real ``logtide serve --auth`` with TLS and the stand-in ``pyspark`` of
``test_pipeline_logins.py``: a job whose login and TLS were accepted passes its checks and imports pyspark."""

from __future__ import annotations

import sys

import pytest

from logtide.spark.kafka_config import parse_jaas, parse_properties
from logtide.spark.options import OptionError

from .test_pipeline_logins import job_env, reached_spark, run, write_credentials
from .test_secured_sources import PASSWORD, USER, tls_login_server

pytestmark = pytest.mark.long_running(seconds=90)  # Spark jobs run as commands: handed out first (tests/conftest.py)

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory):
    """A server requiring logins over TLS only (CQL and Kafka) holding ks.t with a changefeed f: (server, CA)."""
    srv, ca = tls_login_server(tmp_path_factory.mktemp("client-files"), 1)
    yield srv, ca
    srv.stop()


def jaas(module: str = PLAIN, password: str = PASSWORD) -> str:
    return f'{module} required username="{USER}" password="{password}";'


def properties(tmp_path, text: str, mode: int = 0o600):
    return write_credentials(tmp_path / "client.properties", text, mode)


def lakehouse(srv, tmp_path, *more: str) -> list[str]:
    return [sys.executable, "-m", "logtide", "pipeline", "lakehouse", "--source", f"kafka://{srv.kafka}/ks/t/f",
            "--cql-port", str(srv.port), "--target", str(tmp_path / "target"), "--format", "parquet", *more]


def test_the_lakehouse_job_logs_in_with_a_kafka_client_properties_file(tls_server, tmp_path):
    srv, ca = tls_server
    for mechanism, module in (("PLAIN", PLAIN), ("SCRAM-SHA-256", SCRAM), ("SCRAM-SHA-512", SCRAM)):
        conf = properties(tmp_path, f"# a Kafka user's client.properties\nsecurity.protocol=SASL_SSL\n"
                                    f"sasl.mechanism={mechanism}\nsasl.jaas.config={jaas(module)}\n"
                                    f"ssl.ca.location={ca}\n")
        done = run(lakehouse(srv, tmp_path, "--command-config", str(conf)), job_env(tmp_path))
        assert reached_spark(done, tmp_path), (mechanism, done.stderr)
        assert "warning" not in done.stderr
    # Java's PEM trust store form and a JAAS line continued over lines, as Kafka's tools read them
    conf = properties(tmp_path, f"security.protocol = SASL_SSL\nssl.truststore.type: PEM\nssl.truststore.location "
                                f"{ca}\nsasl.jaas.config={PLAIN} required \\\n    username=\"{USER}\" \\\n"
                                f"    password=\"{PASSWORD}\";\n")
    assert reached_spark(run(lakehouse(srv, tmp_path, "--command-config", str(conf)), job_env(tmp_path)), tmp_path)


def test_a_login_from_the_command_line_or_the_environment_wins_over_the_files(tls_server, tmp_path):
    srv, ca = tls_server
    good = f"security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config={jaas()}\nssl.ca.location={ca}\n"
    conf = properties(tmp_path, good)
    wrong_env = job_env(tmp_path, LOGTIDE_KAFKA_USERNAME=USER, LOGTIDE_KAFKA_PASSWORD="wrong")
    done = run(lakehouse(srv, tmp_path, "--command-config", str(conf)), wrong_env)
    assert not reached_spark(done, tmp_path) and done.returncode == 2 and "login refused" in done.stderr
    assert len(done.stderr.splitlines()) == 1
    # the file's login is wrong, the environment's right: the environment wins, the file's TLS settings stay
    conf = properties(tmp_path, good.replace(PASSWORD, "wrong"))
    right_env = job_env(tmp_path, LOGTIDE_KAFKA_USERNAME=USER, LOGTIDE_KAFKA_PASSWORD=PASSWORD)
    assert reached_spark(run(lakehouse(srv, tmp_path, "--command-config", str(conf)), right_env), tmp_path)
    # -o kafka.KEY wins over the file's KEY
    done = run(lakehouse(srv, tmp_path, "--command-config", str(conf), "-o",
                         f"kafka.sasl.jaas.config={jaas()}"), job_env(tmp_path))
    assert reached_spark(done, tmp_path), done.stderr
    assert "warning: -o kafka.sasl.jaas.config carries a password" in done.stderr


@pytest.mark.parametrize("text, expected", [
    (f"sasl.jaas.config={PLAIN} required username=\"{USER}\" password=\"{PASSWORD}\"\n",
     "malformed JAAS line: the line does not end with ';'"),
    (f"sasl.jaas.config={PLAIN} username=\"{USER}\" password=\"{PASSWORD}\";\n",
     "malformed JAAS line: the login module must be followed by a control flag"),
    (f"sasl.jaas.config={PLAIN} required username=\"{USER}\";\n", "malformed JAAS line: no password"),
    ("sasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true;\n",
     "login module com.sun.security.auth.module.Krb5LoginModule is not one logtide's Kafka endpoint serves"),
    (f"sasl.jaas.config={SCRAM} required username=\"{USER}\" password=\"{PASSWORD}\";\n",
     "the ScramLoginModule needs sasl.mechanism SCRAM-SHA-256 or SCRAM-SHA-512"),
    (f"sasl.mechanism=PLAIN\nsasl.jaas.config={SCRAM} required username=\"{USER}\" password=\"{PASSWORD}\";\n",
     "PLAIN does not go with the ScramLoginModule of sasl.jaas.config"),
    ("ssl.truststore.location=/etc/kafka/truststore.jks\nssl.truststore.password=changeit\n",
     "a Java keystore's password: give ssl.ca.location (PEM files, no password) instead"),
    ("ssl.truststore.location=/etc/kafka/truststore.jks\n",
     "a Java keystore (JKS unless ssl.truststore.type=PEM), which only Java reads: give ssl.ca.location"),
    ("security.protocol=SASL_TLS\n", "expected one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL, got 'SASL_TLS'"),
    ("sasl.mechanism=GSSAPI\n", "expected one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512"),
])
def test_a_malformed_client_file_is_one_line_naming_it(tls_server, tmp_path, text, expected):
    srv, _ = tls_server
    conf = properties(tmp_path, text)
    done = run(lakehouse(srv, tmp_path, "--command-config", str(conf)), job_env(tmp_path))
    assert done.returncode == 2 and not reached_spark(done, tmp_path)
    assert done.stderr.startswith(f"logtide pipeline lakehouse: error: --command-config {conf}"), done.stderr
    assert expected in done.stderr and len(done.stderr.splitlines()) == 1
    assert PASSWORD not in done.stderr and "changeit" not in done.stderr


def test_a_client_file_holding_a_password_others_may_read_is_refused(tls_server, tmp_path):
    srv, ca = tls_server
    conf = properties(tmp_path, f"sasl.jaas.config={jaas()}\nssl.ca.location={ca}\n", mode=0o644)
    done = run(lakehouse(srv, tmp_path, "--command-config", str(conf)), job_env(tmp_path))
    assert done.returncode == 2 and not reached_spark(done, tmp_path)
    assert done.stderr.strip() == (f"logtide pipeline lakehouse: error: --command-config {conf}: the file holds a "
                                   f"password and may be read by others (mode 0644): it must be yours and private "
                                   f"(chmod 600 {conf})")


def test_jaas_lines_parse_as_kafkas_client_reads_them():
    login = parse_jaas(f'{SCRAM} required\n  username=etl password="p\\"w;x" ;', "option kafka.sasl.jaas.config")
    assert (login.module, login.username, login.password) == (SCRAM, "etl", 'p"w;x')
    for text, why in ((jaas() + " " + jaas(), "more than one login module"),
                      (f'{PLAIN} required username="etl" password="unclosed;', "a quoted value is not closed"),
                      (f'{PLAIN} required username="etl" username="x" password="p";', "option username is given twice"),
                      ("", "it is empty")):
        with pytest.raises(OptionError, match="^option kafka.sasl.jaas.config: malformed JAAS line: "
                                              + why):
            parse_jaas(text, "option kafka.sasl.jaas.config")
    assert parse_properties("a=1\n! comment\nb : two\\\n  words\nc\\u0041 3\nd=\n", "f") == {
        "a": "1", "b": "twowords", "cA": "3", "d": ""}


def test_the_changefeed_source_takes_kafkas_jaas_forms_and_refuses_a_java_trust_store():
    from logtide.spark.changefeed_options import ChangefeedSettings

    base = {"subscribe": "ks.t.f", "kafka.bootstrap.servers": "127.0.0.1:1"}
    scram = ChangefeedSettings.parse({**base, "kafka.sasl.mechanism": "SCRAM-SHA-512",
                                      "kafka.sasl.jaas.config": jaas(SCRAM)})
    assert dict(scram.address.kafka.extra) == {"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": USER,
                                               "sasl.password": PASSWORD}
    assert (scram.cql_username, scram.cql_password) == (USER, PASSWORD)
    plain = ChangefeedSettings.parse({**base, "kafka.sasl.jaas.config": jaas()})
    assert dict(plain.address.kafka.extra)["sasl.mechanism"] == "PLAIN"
    with pytest.raises(OptionError, match="^option kafka.sasl.jaas.config: malformed JAAS line: no password"):
        ChangefeedSettings.parse({**base, "kafka.sasl.jaas.config": f'{PLAIN} required username="{USER}";'})
    with pytest.raises(OptionError, match="^option kafka.ssl.truststore.type: JKS is a Java keystore, which only "
                                          "Java reads: give ssl.ca.location"):
        ChangefeedSettings.parse({**base, "kafka.ssl.truststore.type": "JKS",
                                  "kafka.ssl.truststore.location": "/x.jks"})


def replicate(srv, tmp_path, source_query: str, target_query: str) -> list[str]:
    here = f"127.0.0.1:{srv.port}"
    return [sys.executable, "-m", "logtide", "pipeline", "replicate", "--source", f"cql://{here}/ks.t{source_query}",
            "--target", f"cql://{here}/ks.copy{target_query}", "--checkpoint", str(tmp_path / "ckpt")]


def test_replicate_reaches_a_tls_server_with_the_urls_tls_settings(tls_server, tmp_path):
    srv, ca = tls_server
    env = job_env(tmp_path, LOGTIDE_CQL_USERNAME=USER, LOGTIDE_CQL_PASSWORD=PASSWORD)
    ours, connector = f"?ssl=true&sslCaFile={ca}", (f"?spark.cassandra.connection.ssl.enabled=true&spark.cassandra."
                                                    f"connection.ssl.trustStore.path={ca}&spark.cassandra.connection"
                                                    f".ssl.protocol=TLSv1.2")
    for source, target in ((ours, ours), (connector, ours), (ours, connector)):
        done = run(replicate(srv, tmp_path, source, target), env)
        assert reached_spark(done, tmp_path), (source, target, done.stderr)
    # the target without TLS settings, a Java trust store, an unknown setting: one line naming the URL
    jks = tmp_path / "truststore.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed" + bytes(60))
    for target, expected in (
            ("", f"cannot connect to 127.0.0.1:{srv.port}: "),
            (f"?ssl=true&sslCaFile={jks}", f"--target: option sslCaFile (spark.cassandra.connection.ssl.trustStore"
                                           f".path): {jks} is a Java keystore or binary certificate (JKS)"),
            (f"?spark.cassandra.connection.ssl.enabled=true&spark.cassandra.connection.ssl.trustStore.type=JKS",
             "--target: option spark.cassandra.connection.ssl.trustStore.type: JKS is a Java keystore"),
            ("?consistency=ALL", "--target: unknown URL setting 'consistency': a cql:// URL takes TLS settings only"),
    ):
        done = run(replicate(srv, tmp_path, ours, target), env)
        assert done.returncode == 2 and not reached_spark(done, tmp_path), target
        assert expected in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr


def test_replicates_sources_read_with_the_urls_tls_settings():
    from logtide.spark.replicate import connection_options, parse_url

    conn = parse_url("cql://h:9142/ks.t?spark.cassandra.connection.ssl.enabled=true&sslVerify=false"
                     "&spark.cassandra.connection.ssl.protocol=TLSv1.2", "source")
    assert connection_options(conn) == {"host": "h", "port": "9142", "table": "ks.t", "consistency": "LOCAL_ONE",
                                        "ssl": "true", "sslVerify": "false", "sslProtocol": "TLSV1.2"}
