"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677; Kafka's KIP-84): the credentials a role keeps and the
server side of the exchange.

A role whose password is set gets SCRAM credentials for each mechanism next to
its scrypt hash (``scram_credentials``): salt, iteration count, StoredKey and
ServerKey, from which the password cannot be recovered and with which the
server checks a client's proof and proves itself to the client.  The two
mechanisms differ only in the hash (SHA-256 or SHA-512) of every step.  ``ScramServer`` runs one
exchange: client-first -> server-first, client-final -> server-final.
A client-final nonce of the client nonce followed by the whole nonce is
accepted too (librdkafka before 2.6.1 sends that; Kafka 3.x accepts it).
Channel binding is not offered (gs2 flag ``n`` or ``y``); usernames are taken
as sent after unescaping ``=2C`` and ``=3D`` (no SASLprep: logtide role names
are compared exactly, as CQL logins are).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from dataclasses import dataclass
from typing import Callable

SHA256 = "SCRAM-SHA-256"
SHA512 = "SCRAM-SHA-512"
HASHES = {SHA256: "sha256", SHA512: "sha512"}  # each mechanism's hash (hashlib names)
ITERATIONS = 4096  # RFC 7677 §4: at least 4096 (Kafka's minimum for both mechanisms)
NONCE_BYTES = 24


class ScramError(Exception):
    """The exchange fails; the message is what the client is told."""


@dataclass(frozen=True)
class ScramCredentials:
    """RFC 5802 §3: what the server stores for a password (never the password), for one mechanism."""

    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes
    mechanism: str = SHA256

    def to_json(self) -> dict:
        return {"salt": _b64(self.salt), "iterations": self.iterations, "stored_key": _b64(self.stored_key),
                "server_key": _b64(self.server_key)}

    @classmethod
    def from_json(cls, doc: dict, mechanism: str = SHA256) -> "ScramCredentials":
        return cls(base64.b64decode(doc["salt"]), int(doc["iterations"]), base64.b64decode(doc["stored_key"]),
                   base64.b64decode(doc["server_key"]), mechanism)


def _hmac(key: bytes, msg: bytes, hash_name: str = "sha256") -> bytes:
    return hmac.new(key, msg, hash_name).digest()


def _digest(data: bytes, hash_name: str) -> bytes:
    return hashlib.new(hash_name, data).digest()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def scram_credentials(password: str, salt: bytes | None = None, iterations: int = ITERATIONS,
                      mechanism: str = SHA256) -> ScramCredentials:
    """SaltedPassword = Hi(password, salt, i); StoredKey = H(HMAC(SaltedPassword, "Client Key")),
    ServerKey = HMAC(SaltedPassword, "Server Key") (RFC 5802 §3), H being the mechanism's hash."""
    h = HASHES[mechanism]
    salt = os.urandom(16) if salt is None else salt
    salted = hashlib.pbkdf2_hmac(h, password.encode("utf-8"), salt, iterations)
    return ScramCredentials(salt, iterations, _digest(_hmac(salted, b"Client Key", h), h),
                            _hmac(salted, b"Server Key", h), mechanism)


def _attributes(message: str) -> list[tuple[str, str]]:
    out = []
    for part in message.split(","):
        if len(part) < 2 or part[1] != "=":
            raise ScramError(f"malformed SCRAM message attribute '{part[:20]}'")
        out.append((part[0], part[2:]))
    return out


def _unescape(name: str) -> str:
    if "=" in name.replace("=2C", "").replace("=3D", ""):
        raise ScramError("malformed SCRAM username")
    return name.replace("=2C", ",").replace("=3D", "=")


class ScramServer:
    """One exchange of ``mechanism`` (SCRAM-SHA-256 or SCRAM-SHA-512).  ``lookup(user)`` gives the role's
    credentials for it (raises ScramError when the client may not log in that way); ``step`` takes each client
    message and returns the server's answer; ``user`` is set once the client has proved its password."""

    def __init__(self, lookup: Callable[[str], ScramCredentials], server_nonce: str | None = None,
                 mechanism: str = SHA256) -> None:
        if mechanism not in HASHES:
            raise ValueError(f"unknown SCRAM mechanism {mechanism}")
        self.lookup = lookup
        self.mechanism = mechanism
        self._hash = HASHES[mechanism]
        self._server_nonce = server_nonce or base64.b64encode(os.urandom(NONCE_BYTES)).decode("ascii")
        self.user: str | None = None
        self._state = "first"
        self._name = ""
        self._creds: ScramCredentials | None = None
        self._gs2 = ""
        self._client_nonce = ""
        self._nonce = ""
        self._first_bare = ""
        self._server_first = ""

    @property
    def done(self) -> bool:
        return self._state == "done"

    @property
    def awaiting_proof(self) -> bool:
        """The next client message is client-final, with the proof of the password."""
        return self._state == "final"

    @property
    def name(self) -> str:
        """The username the client-first message gave ("" before it)."""
        return self._name

    def step(self, message: bytes) -> bytes:
        try:
            text = message.decode("utf-8")
        except UnicodeDecodeError:
            raise ScramError("malformed SCRAM message: not UTF-8") from None
        if self._state == "first":
            return self._client_first(text).encode("utf-8")
        if self._state == "final":
            return self._client_final(text).encode("utf-8")
        raise ScramError("the SCRAM exchange is already over")

    def _client_first(self, text: str) -> str:
        # gs2-header = gs2-cbind-flag "," [ authzid ] "," ; then client-first-message-bare
        parts = text.split(",", 2)
        if len(parts) != 3:
            raise ScramError("malformed SCRAM client-first message")
        flag, authzid, bare = parts
        if flag.startswith("p="):
            raise ScramError("SCRAM channel binding is not supported")
        if flag not in ("n", "y") or (authzid and not authzid.startswith("a=")):
            raise ScramError("malformed SCRAM gs2 header")
        attrs = _attributes(bare)
        if len(attrs) < 2 or attrs[0][0] != "n" or attrs[1][0] != "r" or not attrs[1][1]:
            raise ScramError("malformed SCRAM client-first message: n= and r= must come first")
        self._name = _unescape(attrs[0][1])
        if authzid and _unescape(authzid[2:]) != self._name:
            raise ScramError("SCRAM authorization identity must be the username")
        self._creds = self.lookup(self._name)
        if self._creds.mechanism != self.mechanism:
            raise ScramError(f"{self._creds.mechanism} credentials cannot check a {self.mechanism} login")
        self._gs2 = f"{flag},{authzid},"
        self._client_nonce = attrs[1][1]
        self._nonce = self._client_nonce + self._server_nonce
        self._first_bare = bare
        self._server_first = f"r={self._nonce},s={_b64(self._creds.salt)},i={self._creds.iterations}"
        self._state = "final"
        return self._server_first

    def _client_final(self, text: str) -> str:
        self._state = "failed"
        without_proof, sep, proof_b64 = text.rpartition(",p=")
        if not sep:
            raise ScramError("malformed SCRAM client-final message: no proof")
        attrs = dict(_attributes(without_proof))
        if attrs.get("c") != _b64(self._gs2.encode("utf-8")):
            raise ScramError("SCRAM channel binding data does not match the gs2 header")
        # librdkafka before 2.6.1 (Debian's kcat, older confluent-kafka) sends the client nonce again in front
        # of the whole nonce; Kafka 3.x accepted it, and it still carries this exchange's server nonce
        if attrs.get("r") not in (self._nonce, self._client_nonce + self._nonce):
            raise ScramError("SCRAM nonce does not match")
        try:
            proof = base64.b64decode(proof_b64, validate=True)
        except ValueError:
            raise ScramError("malformed SCRAM proof") from None
        creds = self._creds
        assert creds is not None
        auth_message = f"{self._first_bare},{self._server_first},{without_proof}".encode("utf-8")
        signature = _hmac(creds.stored_key, auth_message, self._hash)
        if len(proof) != len(signature):
            raise ScramError("malformed SCRAM proof")
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        if not hmac.compare_digest(_digest(client_key, self._hash), creds.stored_key):
            raise ScramError(f"Provided username {self._name} and/or password are incorrect")
        self.user = self._name
        self._state = "done"
        return "v=" + _b64(_hmac(creds.server_key, auth_message, self._hash))
