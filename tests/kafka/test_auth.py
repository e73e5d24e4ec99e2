"""With ``--auth``: SASL/PLAIN against logtide's roles, SELECT on the table to read its changefeed, TLS."""

from __future__ import annotations

import shutil
import ssl
import subprocess

import pytest

import logtide
from logtide import auth
from logtide.kafka import BackgroundKafka, KafkaConfig

from .conftest import wait_for

ADMIN, ADMIN_PW = "admin", "admin pw"


@pytest.fixture
def secured(tmp_path, changefeeds):
    """A broker requiring logins: role ``reader`` may SELECT ks.t0 (the first feed's table), ``other`` may not."""
    db = changefeeds.db or logtide.open(tmp_path / "authdata", synchronous="OFF")
    manager = auth.attach(db, True, ADMIN, ADMIN_PW)
    s = db.session()
    s.execute("CREATE KEYSPACE IF NOT EXISTS ks WITH replication = "
              "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TABLE IF NOT EXISTS ks.t0 (id int PRIMARY KEY, v text)")
    s.execute("CREATE ROLE reader WITH PASSWORD = 'r pw' AND LOGIN = true")
    s.execute("CREATE ROLE other WITH PASSWORD = 'o pw' AND LOGIN = true")
    s.execute("GRANT SELECT ON ks.t0 TO reader")
    with BackgroundKafka(changefeeds.reader, KafkaConfig(port=0), manager) as b:
        yield b
    if db is not changefeeds.db:
        db.close()


def kp_consumer(bootstrap: str, user: str, password: str, **kw):
    from kafka import KafkaConsumer
    return KafkaConsumer(bootstrap_servers=bootstrap, security_protocol=kw.pop("security_protocol", "SASL_PLAINTEXT"),
                         sasl_mechanism="PLAIN", sasl_plain_username=user, sasl_plain_password=password, **kw)


def test_login_and_select_permission_decide_what_a_role_reads(secured, changefeeds):
    from kafka import TopicPartition
    feed = changefeeds.make("JSON", partitions=1)
    for i in range(3):
        feed.write(i)
    c = kp_consumer(secured.bootstrap, "reader", "r pw", auto_offset_reset="earliest")
    assert c.topics() == {feed.topic}
    c.assign([TopicPartition(feed.topic, 0)])
    got: list[int] = []
    wait_for(lambda: got.extend(m.offset for ms in c.poll(200).values() for m in ms) or len(got) >= 3)
    c.close()
    o = kp_consumer(secured.bootstrap, "other", "o pw")
    assert o.topics() == set()  # topics it may not read are not listed
    o.close()


def test_reading_without_select_is_topic_authorization_failed(secured, changefeeds):
    from confluent_kafka import Consumer, KafkaError
    feed = changefeeds.make("JSON", partitions=1)
    feed.write(1)
    c = Consumer({"bootstrap.servers": secured.bootstrap, "group.id": "g", "security.protocol": "SASL_PLAINTEXT",
                  "sasl.mechanism": "PLAIN", "sasl.username": "other", "sasl.password": "o pw",
                  "auto.offset.reset": "earliest"})
    c.subscribe([feed.topic])
    errors = []
    wait_for(lambda: (m := c.poll(0.5)) is not None and m.error() is not None and errors.append(m.error()) is None,
             what="the authorization error")
    assert errors[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    c.close()


def test_wrong_password_is_each_clients_authentication_error(secured, caplog):
    from confluent_kafka import Consumer, KafkaError
    from kafka.errors import KafkaError as KPError
    with pytest.raises(KPError):  # kafka-python logs the failure and gives up bootstrapping
        kp_consumer(secured.bootstrap, "reader", "wrong", bootstrap_timeout_ms=3000)
    assert "SaslAuthenticationFailedError: Provided username reader and/or password are incorrect" in caplog.text
    errors = []
    c = Consumer({"bootstrap.servers": secured.bootstrap, "group.id": "g", "security.protocol": "SASL_PLAINTEXT",
                  "sasl.mechanism": "PLAIN", "sasl.username": "reader", "sasl.password": "wrong",
                  "error_cb": errors.append})
    c.subscribe(["x"])
    wait_for(lambda: c.poll(0.2) is None and any(e.code() == KafkaError._AUTHENTICATION for e in errors),
             what="the authentication error")
    assert "incorrect" in next(e for e in errors if e.code() == KafkaError._AUTHENTICATION).str()
    c.close()

    caplog.clear()
    aiokafka_login_fails(secured.bootstrap, "PLAIN", "reader", "wrong")
    assert "SaslAuthenticationFailed: Provided username reader and/or password are incorrect" in caplog.text


def aiokafka_login_fails(bootstrap: str, mechanism: str, user: str, password: str) -> None:
    """aiokafka logs a failed login and gives up bootstrapping with KafkaConnectionError."""
    import asyncio

    from aiokafka import AIOKafkaConsumer
    from aiokafka.errors import KafkaConnectionError

    async def aio() -> None:
        a = AIOKafkaConsumer(bootstrap_servers=bootstrap, security_protocol="SASL_PLAINTEXT",
                             sasl_mechanism=mechanism, sasl_plain_username=user, sasl_plain_password=password)
        try:
            await a.start()
        finally:
            await a.stop()

    with pytest.raises(KafkaConnectionError):
        asyncio.run(aio())


def test_unauthenticated_requests_are_refused(secured):
    from kafka import KafkaConsumer
    from kafka.errors import KafkaError as KPError
    with pytest.raises(KPError):
        KafkaConsumer(bootstrap_servers=secured.bootstrap, bootstrap_timeout_ms=3000)


def test_tls_with_the_servers_certificate(tmp_path, changefeeds):
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    from logtide.server.cli import tls_context
    feed = changefeeds.make("JSON", partitions=1)
    feed.write(7)
    with BackgroundKafka(changefeeds.reader, KafkaConfig(port=0, tls=tls_context(str(cert), str(key)))) as b:
        from confluent_kafka import Consumer, TopicPartition
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "tls", "security.protocol": "SSL",
                      "ssl.ca.location": str(cert)})
        c.assign([TopicPartition(feed.topic, 0, 0)])
        got = []
        wait_for(lambda: (m := c.poll(0.5)) is not None and not m.error() and got.append(m.value()) is None)
        assert feed.value_row_id(got[0]) == 7
        c.close()
        from kafka import KafkaConsumer
        ctx = ssl.create_default_context(cafile=str(cert))
        kp = KafkaConsumer(bootstrap_servers=b.bootstrap, security_protocol="SSL", ssl_context=ctx)
        assert kp.topics() == {feed.topic}
        kp.close()
