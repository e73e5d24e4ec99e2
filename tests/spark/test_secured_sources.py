"""The three sources against a ``logtide serve`` with ``--auth`` and TLS (CQL and Kafka): logins, certificates, and
the errors a Spark user sees when either is wrong (docs/spark.md "Connection options")."""

from __future__ import annotations

import ssl
import subprocess
from pathlib import Path

import pytest
from cassandra.auth import PlainTextAuthProvider

from tests.ops.serving import certificate_or_skip

from .conftest import KEYSPACE_DDL, cluster, serve
from .test_changefeed_source import kafka_port

USER, PASSWORD = "etl", "s3cret pw"


def tls_login_server(d: Path, rows: int) -> tuple:
    """A server requiring logins (USER, PASSWORD) over TLS only (CQL and Kafka), holding ks.t (CDC and a
    NEW_IMAGE JSON changefeed f on) with ``rows`` rows: (server, CA file); the server's ``kafka`` is its Kafka
    bootstrap address."""
    cert, key = certificate_or_skip(d)
    (d / "pw").write_text(PASSWORD + "\n")
    srv = serve(d / "data", "--auth", "--superuser", USER, "--superuser-password-file", str(d / "pw"),
                "--tls-cert", str(cert), "--tls-key", str(key), "--kafka-port", "auto")
    srv.kafka = f"127.0.0.1:{kafka_port(srv)}"
    c = cluster(srv.port, ssl_context=ssl.create_default_context(cafile=str(cert)),
                auth_provider=PlainTextAuthProvider(USER, PASSWORD))
    s = c.connect()
    s.execute(KEYSPACE_DDL.format("ks"))
    s.execute("CREATE TABLE ks.t (pk int, ck int, v text, PRIMARY KEY (pk, ck)) WITH cdc = {'enabled': true}")
    s.execute("ALTER TABLE ks.t ADD CHANGEFEED f WITH (MODE = 'NEW_IMAGE', FORMAT = 'JSON')")
    ins = s.prepare("INSERT INTO ks.t (pk, ck, v) VALUES (?, ?, ?)")
    for i in range(rows):
        s.execute(ins, (i % 6, i, f"v{i}"))
    c.shutdown()
    return srv, str(cert)


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    """:func:`tls_login_server` with 40 rows."""
    srv, ca = tls_login_server(tmp_path_factory.mktemp("secured"), 40)
    yield srv, ca
    srv.stop()


def options(srv, ca: str | None, password: str = PASSWORD, **more: str) -> dict:
    opts = {"host": "127.0.0.1", "port": str(srv.port), "table": "ks.t", "username": USER, "password": password,
            "ssl": "true", "timeout": "10", **more}
    return {**opts, "sslCaFile": ca} if ca else opts


def test_table_and_cdc_log_are_read_with_a_login_over_tls(spark, secured):
    srv, ca = secured
    rows = spark.read.format("logtide").options(**options(srv, ca, splits="3")).load().collect()
    assert sorted((r.pk, r.ck, r.v) for r in rows) == sorted((i % 6, i, f"v{i}") for i in range(40))
    log = spark.read.format("logtide-cdc").options(**options(srv, ca, confidenceWindow="0s")).load()
    assert sorted(r.ck for r in log.where("_change_type = 'insert'").collect()) == list(range(40))
    # sslVerify=false: encrypted, the certificate not checked
    assert spark.read.format("logtide").options(**options(srv, None, sslVerify="false")).load().count() == 40


def message(spark, fmt: str, opts: dict) -> str:
    from pyspark.errors import PySparkException

    with pytest.raises(PySparkException) as e:
        spark.read.format(fmt).options(**opts).load().collect()
    text = str(e.value)
    assert text.count('File "') <= 1, f"a traceback hides the message:\n{text}"  # only the re-raising frame
    return text


@pytest.mark.parametrize("fmt", ["logtide", "logtide-cdc"])
def test_a_wrong_password_or_an_untrusted_certificate_is_a_clear_error(spark, secured, fmt):
    srv, ca = secured
    text = message(spark, fmt, options(srv, ca, password="wrong"))
    assert (f"cannot connect to 127.0.0.1:{srv.port}: login refused (Provided username {USER} and/or password are "
            f"incorrect): check the options username and password") in text
    assert "wrong" not in text  # the password is never shown
    text = message(spark, fmt, options(srv, None))  # the self-signed certificate is in no system CA bundle
    assert ("the server's TLS certificate is not trusted (self-signed certificate): option sslCaFile must name the "
            "PEM bundle of the CA that signed it") in text
    opts = options(srv, ca)
    del opts["username"], opts["password"]
    assert "the server requires a login: set the options username and password" in message(spark, fmt, opts)


def changefeed_options(srv, ca: str | None, password: str = PASSWORD) -> dict:
    opts = {"topic": "ks/t/f", "bootstrap": srv.kafka, "cqlPort": str(srv.port), "username": USER,
            "password": password, "ssl": "true", "timeout": "10"}
    return {**opts, "sslCaFile": ca} if ca else opts


def test_a_changefeed_is_read_over_sasl_and_tls_and_refusals_are_clear_errors(spark, secured):
    srv, ca = secured
    rows = spark.read.format("logtide-changefeed").options(**changefeed_options(srv, ca)).load().collect()
    assert sorted(r.ck for r in rows) == list(range(40))
    login = f"login refused (Provided username {USER} and/or password are incorrect): check the options username"
    untrusted = "the server's TLS certificate is not trusted ("
    # the schema is read over CQL first, with the same login and TLS settings
    for opts, reason in ((changefeed_options(srv, ca, password="wrong"), login),
                         (changefeed_options(srv, None), untrusted)):
        text = message(spark, "logtide-changefeed", opts)
        assert f"cannot connect to 127.0.0.1:{srv.port}: {reason}" in text and "wrong" not in text
    # given the schema, only Kafka is used: SASL/PLAIN and TLS refusals name the same options
    schema = {"tableSchema": "pk int, ck int, v text, PRIMARY KEY ((pk), ck)", "mode": "NEW_IMAGE", "format": "JSON"}
    for opts, reason in ((changefeed_options(srv, ca, password="wrong"), login),
                         (changefeed_options(srv, None), untrusted)):
        text = message(spark, "logtide-changefeed", {**opts, **schema})
        assert f"cannot reach the Kafka bootstrap servers {srv.kafka}: {reason}" in text and "wrong" not in text


def test_connector_and_spark_kafka_names_carry_the_login_and_tls_as_logtides_names_do(spark, secured):
    srv, ca = secured
    connector = {"keyspace": "ks", "table": "t", "spark.cassandra.connection.host": "127.0.0.1",
                 "spark.cassandra.connection.port": str(srv.port), "spark.cassandra.auth.username": USER,
                 "spark.cassandra.auth.password": PASSWORD, "spark.cassandra.connection.ssl.enabled": "true",
                 "spark.cassandra.connection.ssl.trustStore.path": ca}
    for fmt, more in (("logtide", {}), ("logtide-cdc", {"confidenceWindow": "0s"})):
        ours = spark.read.format(fmt).options(**options(srv, ca, **more)).load()
        theirs = spark.read.format(fmt).options(**connector, **more).load()
        assert sorted(map(tuple, theirs.collect())) == sorted(map(tuple, ours.collect())), fmt
    jaas = f'org.apache.kafka.common.security.plain.PlainLoginModule required username="{USER}" password="{PASSWORD}";'
    kafka = {"subscribe": "ks.t.f", "kafka.bootstrap.servers": srv.kafka, "cqlPort": str(srv.port),
             "kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "PLAIN", "kafka.sasl.jaas.config": jaas,
             "kafka.ssl.ca.location": ca, "timeout": "10"}
    ours = spark.read.format("logtide-changefeed").options(**changefeed_options(srv, ca)).load()
    theirs = spark.read.format("logtide-changefeed").options(**kafka).load()
    assert sorted(map(tuple, theirs.collect())) == sorted(map(tuple, ours.collect()))
    assert theirs.count() == 40
    scram = jaas.replace("plain.PlainLoginModule", "scram.ScramLoginModule")  # Kafka's SCRAM login module
    theirs = spark.read.format("logtide-changefeed").options(**{**kafka, "kafka.sasl.mechanism": "SCRAM-SHA-512",
                                                                "kafka.sasl.jaas.config": scram}).load()
    assert sorted(map(tuple, theirs.collect())) == sorted(map(tuple, ours.collect()))


def connector_tls(srv, **tls: str) -> dict:
    """Connector settings reading ks.t from the secured server, with these ``spark.cassandra.connection.ssl.*``."""
    return {"keyspace": "ks", "table": "t", "spark.cassandra.connection.host": "127.0.0.1",
            "spark.cassandra.connection.port": str(srv.port), "spark.cassandra.auth.username": USER,
            "spark.cassandra.auth.password": PASSWORD, "spark.cassandra.connection.ssl.enabled": "true",
            "spark.cassandra.read.timeoutMS": "10000",
            **{f"spark.cassandra.connection.ssl.{k.replace('_', '.')}": v for k, v in tls.items()}}


def test_the_connectors_client_certificate_and_protocol_settings_read_over_tls(spark, secured, tmp_path):
    srv, ca = secured
    key = tmp_path / "client.pem"  # a client's certificate and key in one PEM file (the server's pair serves)
    key.write_text(open(ca).read() + (Path(ca).parent / "key.pem").read_text())
    expected = sorted((i % 6, i, f"v{i}") for i in range(40))
    for tls in ({"trustStore_path": ca, "protocol": "TLSv1.2"},
                {"trustStore_path": ca, "clientAuth_enabled": "true", "keyStore_path": str(key)}):
        rows = spark.read.format("logtide").options(**connector_tls(srv, **tls)).load().collect()
        assert sorted((r.pk, r.ck, r.v) for r in rows) == expected, tls
    from logtide.spark.tls import client_context

    assert client_context(ca, True, None, None, "TLSv1_2").maximum_version == ssl.TLSVersion.TLSv1_2
    # a file without the key is refused naming the option
    text = message(spark, "logtide", connector_tls(srv, trustStore_path=ca, clientAuth_enabled="true",
                                                    keyStore_path=ca))
    assert f"option sslCertFile: {ca} does not hold a certificate and its private key" in text


def test_java_keystores_and_java_only_tls_settings_are_refused_naming_the_pem_option(spark, secured, tmp_path):
    srv, ca = secured
    jks = tmp_path / "truststore.jks"  # a real Java trust store, made by the JDK that Spark runs on
    subprocess.run(["keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", ca, "-keystore", str(jks),
                    "-storepass", "changeit", "-storetype", "JKS"], check=True, capture_output=True)
    text = message(spark, "logtide", connector_tls(srv, trustStore_path=str(jks)))
    assert (f"option sslCaFile (spark.cassandra.connection.ssl.trustStore.path): {jks} is a Java keystore or binary "
            f"certificate (JKS), which only Java reads: give a PEM file instead (keytool -exportcert -rfc") in text
    refusals = {
        "trustStore_type": ("JKS", "option spark.cassandra.connection.ssl.trustStore.type: JKS is a Java keystore, "
                                   "which only Java reads: give a PEM CA bundle"),
        "trustStore_password": ("changeit", "option spark.cassandra.connection.ssl.trustStore.password: a PEM CA "
                                            "bundle has no password"),
        "keyStore_type": ("PKCS12", "option spark.cassandra.connection.ssl.keyStore.type: PKCS12 is a Java keystore"),
        "enabledAlgorithms": ("TLS_RSA_WITH_AES_128_CBC_SHA", "option spark.cassandra.connection.ssl.enabledAlgorithms:"
                                                              " Java's cipher suite names mean nothing to OpenSSL"),
        "protocol": ("SSLv3", "option sslProtocol: expected TLS, TLSv1.2 or TLSv1.3"),
        "keyStore_path": (ca, "option spark.cassandra.connection.ssl.keyStore.path: used only with "
                              "spark.cassandra.connection.ssl.clientAuth.enabled=true"),
    }
    for setting, (value, refusal) in refusals.items():
        assert refusal in message(spark, "logtide", connector_tls(srv, trustStore_path=ca, **{setting: value})), setting
    assert "changeit" not in message(spark, "logtide", connector_tls(srv, trustStore_path=ca,
                                                                     trustStore_password="changeit"))
