"""SASL/SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802/7677) on the Kafka port: the exchange, the stored credentials,
the real clients."""

from __future__ import annotations

import asyncio
import base64

import pytest

from logtide.scram import SHA256, SHA512, ScramError, ScramServer, scram_credentials

from .conftest import wait_for
from .test_auth import aiokafka_login_fails, secured  # noqa: F401  (secured: the fixture)

# RFC 7677 §3's example exchange (user "user", password "pencil")
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def rfc_server() -> ScramServer:
    creds = scram_credentials("pencil", SALT)
    return ScramServer(lambda user: creds, SERVER_NONCE)


def test_the_rfc_7677_example_exchange():
    s = rfc_server()
    assert s.step(CLIENT_FIRST) == SERVER_FIRST
    assert s.step(CLIENT_FINAL) == SERVER_FINAL
    assert s.done and s.user == "user"


def test_a_wrong_proof_fails_and_ends_the_exchange():
    s = rfc_server()
    s.step(CLIENT_FIRST)
    bad = CLIENT_FINAL[:-10] + b"AAAAAAAAA="
    with pytest.raises(ScramError, match="Provided username user and/or password are incorrect"):
        s.step(bad)
    with pytest.raises(ScramError, match="already over"):
        s.step(CLIENT_FINAL)
    assert s.user is None


@pytest.mark.parametrize("first, final, message", [
    (b"p=tls-unique,,n=user,r=x", None, "channel binding is not supported"),
    (b"n,,r=x,n=user", None, "n= and r= must come first"),
    (b"garbage", None, "malformed SCRAM client-first"),
    (b"\xff\xfe", None, "not UTF-8"),
    (b"n,,n=us=er,r=x", None, "malformed SCRAM username"),
    (CLIENT_FIRST, b"c=biws,r=other,p=AAAA", "nonce does not match"),
    (CLIENT_FIRST, b"c=eSws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=AAAA", "channel binding data"),
    (CLIENT_FIRST, b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0", "no proof"),
])
def test_malformed_messages_get_a_clear_error(first, final, message):
    s = rfc_server()
    with pytest.raises(ScramError, match=message):
        s.step(first)
        s.step(final)


def test_setting_a_password_keeps_scram_credentials_and_old_roles_get_a_clear_error(tmp_path):
    import logtide
    from logtide import auth
    db = logtide.open(tmp_path / "d", synchronous="OFF")
    try:
        manager = auth.attach(db, True, "admin", "pw")
        s = db.session()
        s.execute("CREATE ROLE r WITH PASSWORD = 'secret' AND LOGIN = true")
        creds = manager.roles["r"].scram
        assert sorted(creds) == [SHA256, SHA512] and {c.iterations for c in creds.values()} == {4096}
        for mechanism, c in creds.items():
            assert c == scram_credentials("secret", c.salt, mechanism=mechanism) and c.mechanism == mechanism
        assert len(creds[SHA512].stored_key) == 64 and creds[SHA512].salt != creds[SHA256].salt
        again = auth.AuthManager(db, True)  # read back from the store
        assert again.roles["r"].scram == creds
        # a password set before logtide kept SCRAM-SHA-512 credentials (an older logtide kept only SHA-256 ones)
        del manager.roles["r"].scram[SHA512]
        with pytest.raises(ScramError, match=r"Role r has no SCRAM-SHA-512 credentials.*ALTER ROLE r WITH PASSWORD"):
            manager.scram_lookup("r", SHA512)
        assert manager.scram_lookup("r", SHA256) == creds[SHA256]
        manager.roles["r"].scram = {}  # ... or before logtide kept any
        with pytest.raises(ScramError, match=r"Role r has no SCRAM-SHA-256 credentials.*ALTER ROLE r WITH PASSWORD"):
            manager.scram_lookup("r")
        s.execute("ALTER ROLE r WITH PASSWORD = 'new'")
        for mechanism in (SHA256, SHA512):
            salt = manager.roles["r"].scram[mechanism].salt
            assert manager.scram_lookup("r", mechanism) == scram_credentials("new", salt, mechanism=mechanism)
            # decoy: an unknown name fails at the proof, with credentials of the mechanism asked
            assert manager.scram_lookup("nobody", mechanism) is manager.scram_lookup("nobody2", mechanism)
            assert manager.scram_lookup("nobody", mechanism).mechanism == mechanism
    finally:
        db.close()


def test_a_role_document_of_an_older_logtide_reads_back_with_its_sha_256_credentials_only():
    from logtide.auth import Role
    creds = scram_credentials("pw", b"0123456789abcdef")
    role = Role.from_json("r", {"login": True, "password": "scrypt$00$00", "scram_sha_256": creds.to_json()})
    assert role.scram == {SHA256: creds}
    assert Role.from_json("r", role.to_json()).scram == {SHA256: creds}


@pytest.mark.parametrize("mechanism", [SHA256, SHA512])
def test_an_exchange_with_kafka_pythons_scram_client(mechanism):
    """An independent client implementation (kafka-python's ScramClient) logs in and checks the server's proof."""
    from kafka.net.sasl.scram import ScramClient
    creds = scram_credentials("pencil", mechanism=mechanism)
    server = ScramServer(lambda user: creds, mechanism=mechanism)
    client = ScramClient("user", "pencil", mechanism)
    client.process_server_first_message(server.step(client.first_message()))
    client.process_server_final_message(server.step(client.final_message()))  # raises if the proof is wrong
    assert server.done and server.user == "user"
    wrong = ScramClient("user", "not it", mechanism)
    server = ScramServer(lambda user: creds, mechanism=mechanism)
    wrong.process_server_first_message(server.step(wrong.first_message()))
    with pytest.raises(ScramError, match="password are incorrect"):
        server.step(wrong.final_message())
    other = scram_credentials("pencil", mechanism=SHA256 if mechanism == SHA512 else SHA512)
    with pytest.raises(ScramError, match="credentials cannot check"):
        ScramServer(lambda user: other, mechanism=mechanism).step(ScramClient("u", "p", mechanism).first_message())


def kp(bootstrap: str, user: str, password: str, mechanism: str = SHA256, **kw):
    from kafka import KafkaConsumer
    return KafkaConsumer(bootstrap_servers=bootstrap, security_protocol="SASL_PLAINTEXT",
                         sasl_mechanism=mechanism, sasl_plain_username=user, sasl_plain_password=password, **kw)


def ck_config(bootstrap: str, user: str, password: str, mechanism: str = SHA256, **kw) -> dict:
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
            "sasl.username": user, "sasl.password": password, **kw}


@pytest.mark.parametrize("mechanism", [SHA256, SHA512])
def test_each_client_reads_with_scram(secured, changefeeds, mechanism):  # noqa: F811
    from aiokafka import AIOKafkaConsumer
    from confluent_kafka import Consumer, TopicPartition as CTP
    from kafka import TopicPartition
    feed = changefeeds.make("JSON", partitions=1)
    for i in range(3):
        feed.write(i)

    c = kp(secured.bootstrap, "reader", "r pw", mechanism)
    assert c.topics() == {feed.topic}
    c.assign([TopicPartition(feed.topic, 0)])
    c.seek_to_beginning()
    got: list[int] = []
    wait_for(lambda: got.extend(m.offset for ms in c.poll(200).values() for m in ms) or len(got) >= 3)
    c.close()

    ck = Consumer(ck_config(secured.bootstrap, "reader", "r pw", mechanism, **{"group.id": "scram"}))
    ck.assign([CTP(feed.topic, 0, 0)])
    values = []
    wait_for(lambda: (m := ck.poll(0.5)) is not None and not m.error() and values.append(m.value()) is None
             and len(values) >= 3)
    ck.close()

    async def aio() -> list[int]:
        a = AIOKafkaConsumer(feed.topic, bootstrap_servers=secured.bootstrap, security_protocol="SASL_PLAINTEXT",
                             sasl_mechanism=mechanism, sasl_plain_username="reader",
                             sasl_plain_password="r pw", auto_offset_reset="earliest")
        await a.start()
        try:
            out: list[int] = []
            while len(out) < 3:
                for ms in (await a.getmany(timeout_ms=500)).values():
                    out.extend(m.offset for m in ms)
            return out
        finally:
            await a.stop()

    assert asyncio.run(asyncio.wait_for(aio(), 60)) == [0, 1, 2]


@pytest.mark.parametrize("mechanism", [SHA256, SHA512])
def test_wrong_password_and_old_roles_are_each_clients_authentication_error(secured, caplog, mechanism):  # noqa: F811
    from confluent_kafka import Consumer, KafkaError
    from kafka.errors import KafkaError as KPError
    with pytest.raises(KPError):  # kafka-python logs the failure and gives up bootstrapping
        kp(secured.bootstrap, "reader", "wrong", mechanism, bootstrap_timeout_ms=3000)
    assert "Provided username reader and/or password are incorrect" in caplog.text
    caplog.clear()
    # kafka-python retried the wrong password until its bootstrap timeout, so the login guard now slows down
    # logins from this address (docs/server.md, "Password checks") past the next one's timeout: forget that
    secured.broker.login.throttle.succeeded([("address", "127.0.0.1")])
    with pytest.raises(KPError):  # an unknown name fails the same way
        kp(secured.bootstrap, "nobody", "r pw", mechanism, bootstrap_timeout_ms=3000)
    assert "Provided username nobody and/or password are incorrect" in caplog.text

    del secured.broker.auth.roles["other"].scram[mechanism]  # its password was set before logtide kept them
    for user, password, message in (("reader", "wrong", "incorrect"), ("other", "o pw", f"no {mechanism}")):
        errors = []
        c = Consumer(ck_config(secured.bootstrap, user, password, mechanism,
                               **{"group.id": "g", "error_cb": errors.append}))
        c.subscribe(["x"])
        wait_for(lambda: c.poll(0.2) is None and any(e.code() == KafkaError._AUTHENTICATION for e in errors),
                 what="the authentication error")
        assert message in next(e for e in errors if e.code() == KafkaError._AUTHENTICATION).str()
        c.close()

    caplog.clear()
    aiokafka_login_fails(secured.bootstrap, mechanism, "reader", "wrong")
    assert "Provided username reader and/or password are incorrect" in caplog.text


def client_final(password: str, client_first_bare: str, server_first: str) -> tuple[str, bytes]:
    """The client's final message and the server signature it expects (RFC 5802 §3, client side)."""
    import hashlib
    import hmac
    attrs = dict(a.split("=", 1) for a in server_first.split(","))
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), base64.b64decode(attrs["s"]), int(attrs["i"]))
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    without_proof = f"c=biws,r={attrs['r']}"
    auth_message = f"{client_first_bare},{server_first},{without_proof}".encode()
    signature = hmac.new(hashlib.sha256(client_key).digest(), auth_message, hashlib.sha256).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature))
    server_key = hmac.new(salted, b"Server Key", hashlib.sha256).digest()
    return (f"{without_proof},p={base64.b64encode(proof).decode()}",
            hmac.new(server_key, auth_message, hashlib.sha256).digest())


def test_handshake_v0_runs_scram_over_bare_frames(secured):  # noqa: F811
    import struct

    from logtide.kafka import errors as E

    from .rawclient import RawClient
    host, port = secured.bootstrap.rsplit(":", 1)
    c = RawClient(host, int(port))
    _, r = c.call(17, 1, {"mechanism": "GSSAPI"})
    assert c.decode(17, 1, r) == {"error_code": E.UNSUPPORTED_SASL_MECHANISM,
                                  "mechanisms": ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]}
    _, r = c.call(17, 0, {"mechanism": "SCRAM-SHA-256"})
    assert c.decode(17, 0, r)["error_code"] == E.NONE
    bare = "n=reader,r=abcdefgh"
    c.send(struct.pack(">i", len(bare) + 3) + b"n,," + bare.encode())
    server_first = c.recv_frame().decode()
    assert server_first.startswith("r=abcdefgh") and ",i=4096" in server_first
    final, expected = client_final("r pw", bare, server_first)
    c.send(struct.pack(">i", len(final)) + final.encode())
    assert c.recv_frame() == b"v=" + base64.b64encode(expected)
    _, r = c.call(3, 1, {"topics": None})  # authenticated: requests are served
    assert c.decode(3, 1, r)["brokers"][0]["node_id"] == 0
    c.close()


@pytest.mark.parametrize("mechanism", [SHA256, SHA512])
def test_kcat_lists_and_consumes_with_scram(secured, changefeeds, kcat_bin, mechanism):  # noqa: F811
    import subprocess

    from .conftest import kcat_path
    feed = changefeeds.make("JSON", partitions=1)
    feed.write(5)

    def kcat(password: str, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([kcat_path(), "-b", secured.bootstrap, "-X", "security.protocol=SASL_PLAINTEXT",
                               "-X", f"sasl.mechanism={mechanism}", "-X", "sasl.username=reader",
                               "-X", f"sasl.password={password}", *args], capture_output=True, text=True, timeout=120)
    done = kcat("r pw", "-C", "-t", feed.topic, "-o", "beginning", "-e")
    assert done.returncode == 0, done.stderr
    assert feed.value_row_id(done.stdout.splitlines()[0].encode()) == 5
    done = kcat("wrong", "-L", "-m", "5")
    assert done.returncode != 0 and "incorrect" in done.stderr


def test_the_nonce_older_librdkafka_sends_is_accepted_and_others_are_not():
    """librdkafka before 2.6.1 repeats its client nonce in front of the whole nonce in client-final."""
    import hashlib
    import hmac
    creds = scram_credentials("pencil", SALT)
    for nonce, ok in (("rOprNGfwEbeRWgbNEkqO" * 2 + SERVER_NONCE, True), ("x" + "rOprNGfwEbeRWgbNEkqO" + SERVER_NONCE,
                                                                          False)):
        s = ScramServer(lambda user: creds, SERVER_NONCE)
        s.step(CLIENT_FIRST)
        salted = hashlib.pbkdf2_hmac("sha256", b"pencil", SALT, 4096)
        client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
        without_proof = f"c=biws,r={nonce}"
        auth = f"n=user,r=rOprNGfwEbeRWgbNEkqO,{SERVER_FIRST.decode()},{without_proof}".encode()
        sig = hmac.new(hashlib.sha256(client_key).digest(), auth, hashlib.sha256).digest()
        final = f"{without_proof},p={base64.b64encode(bytes(a ^ b for a, b in zip(client_key, sig))).decode()}"
        if ok:
            assert s.step(final.encode()).startswith(b"v=") and s.user == "user"
        else:
            with pytest.raises(ScramError, match="nonce does not match"):
                s.step(final.encode())


def test_an_endpoint_without_roles_refuses_scram_with_a_clear_error(broker):
    from logtide.kafka import errors as E

    from .rawclient import RawClient
    host, port = broker.bootstrap.rsplit(":", 1)
    c = RawClient(host, int(port))
    _, r = c.call(17, 1, {"mechanism": "SCRAM-SHA-256"})
    assert c.decode(17, 1, r)["error_code"] == E.NONE
    _, r = c.call(36, 0, {"auth_bytes": b"n,,n=someone,r=abc"})
    answer = c.decode(36, 0, r)
    assert answer["error_code"] == E.SASL_AUTHENTICATION_FAILED
    assert "SCRAM-SHA-256 needs logtide's roles" in answer["error_message"]
    assert c.recv_frame() is None  # then the connection closes
    c.close()


def test_handshake_v0_scram_on_an_open_endpoint_with_roles(tmp_path, changefeeds):
    """Without --auth (roles exist but logins are not required) SCRAM still runs over bare frames to its end."""
    import struct

    import logtide
    from logtide import auth
    from logtide.kafka import BackgroundKafka, KafkaConfig
    from logtide.kafka import errors as E

    from .rawclient import RawClient
    db = logtide.open(tmp_path / "open", synchronous="OFF")
    try:
        manager = auth.attach(db, False)
        db.session().execute("CREATE ROLE r WITH PASSWORD = 'pw' AND LOGIN = true")
        with BackgroundKafka(changefeeds.reader, KafkaConfig(port=0), manager) as b:
            host, port = b.bootstrap.rsplit(":", 1)
            c = RawClient(host, int(port))
            _, r = c.call(17, 0, {"mechanism": "SCRAM-SHA-256"})
            assert c.decode(17, 0, r)["error_code"] == E.NONE
            bare = "n=r,r=nonce1"
            c.send(struct.pack(">i", len(bare) + 3) + b"n,," + bare.encode())
            server_first = c.recv_frame().decode()
            final, expected = client_final("pw", bare, server_first)
            c.send(struct.pack(">i", len(final)) + final.encode())
            assert c.recv_frame() == b"v=" + base64.b64encode(expected)
            _, r = c.call(3, 1, {"topics": None})
            assert c.decode(3, 1, r)["brokers"][0]["node_id"] == 0
            c.close()
    finally:
        db.close()
