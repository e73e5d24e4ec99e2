"""TLS of the CQL sources: the Spark Cassandra Connector's ``spark.cassandra.connection.ssl.*`` settings and
logtide's own options, as PEM files for Python's ``ssl`` (docs/spark.md "TLS").

The connector reads Java keystores (JKS, PKCS12) through the JVM; the sources run in Python, which reads PEM.
A keystore, or a setting only a keystore has (a trust store's password, a store type other than PEM), is
refused with the PEM option to give instead; a PEM file with the client's certificate and key serves the
connector's client authentication (``clientAuth.enabled`` with ``keyStore.path``), as ScyllaDB and Cassandra
ask for it with ``require_client_auth``.  (``logtide serve`` itself asks for no client certificate.)
"""

from __future__ import annotations

import os
from typing import Any, Mapping

from .option_error import OptionError

PREFIX = "spark.cassandra.connection.ssl."
# the connector's TLS settings -> logtide's option of the same meaning
FILES = {"keyStore.path": "sslCertFile", "keyStore.password": "sslKeyPassword", "protocol": "sslProtocol"}
PROTOCOLS = {"TLS": None, "TLSV1.2": "TLSv1_2", "TLSV1.3": "TLSv1_3"}  # the connector's protocol -> the highest
KEYTOOL = "keytool -exportcert -rfc -keystore STORE -alias ALIAS -file ca.pem"
SETTINGS = ("clientAuth.enabled", "keyStore.path", "keyStore.password", "keyStore.type", "trustStore.password",
            "trustStore.type", "protocol", "enabledAlgorithms")
NAMES = tuple(PREFIX + s for s in SETTINGS)


def connector_tls(opts: dict[str, str], conf: Mapping[str, str]) -> None:
    """Turn the connector's TLS settings beyond ``enabled`` and ``trustStore.path`` (taken from ``opts``, lower-case
    keys, else from ``conf``) into logtide's options in ``opts``, refusing those only Java can follow."""
    given = {}
    for setting in SETTINGS:
        key = (PREFIX + setting).lower()
        value = opts.pop(key, None)
        if value is None:
            value = conf.get(key)
        if value is not None:
            given[setting] = value
    for setting in ("trustStore.type", "keyStore.type"):
        kind = given.get(setting, "PEM").strip().upper()
        if kind != "PEM":
            trust = setting.startswith("trust")
            file = ("a PEM CA bundle (for a self-signed server certificate, the certificate itself)" if trust
                    else "a PEM file with the client's certificate (chain) and private key")
            raise OptionError(f"option {PREFIX}{setting}: {kind} is a Java keystore, which only Java reads: give "
                              f"{file} in {PREFIX}{setting.split('.')[0]}.path and leave {setting} out ({KEYTOOL})")
    if "trustStore.password" in given:
        raise OptionError(f"option {PREFIX}trustStore.password: a PEM CA bundle has no password (logtide reads "
                          f"{PREFIX}trustStore.path / sslCaFile as PEM): leave it out")
    if "enabledAlgorithms" in given:
        raise OptionError(f"option {PREFIX}enabledAlgorithms: Java's cipher suite names mean nothing to OpenSSL, "
                          f"which chooses the ciphers here (its defaults, TLS 1.2 and 1.3): leave it out")
    client_auth = given.get("clientAuth.enabled", "false").strip().lower()
    if client_auth not in ("true", "false"):
        raise OptionError(f"option {PREFIX}clientAuth.enabled: expected true or false, got {client_auth!r}")
    if client_auth == "true" and "keyStore.path" not in given:
        raise OptionError(f"option {PREFIX}clientAuth.enabled: the client's certificate is needed: set "
                          f"{PREFIX}keyStore.path (or sslCertFile) to a PEM file with it and its private key")
    for setting, ours in FILES.items():
        if setting in given:
            if client_auth != "true" and setting.startswith("keyStore"):
                raise OptionError(f"option {PREFIX}{setting}: used only with {PREFIX}clientAuth.enabled=true, as by "
                                  f"the connector")
            if ours.lower() in opts:
                raise OptionError(f"options {PREFIX}{setting} and {ours} mean the same: give one")
            opts[ours.lower()] = given[setting]


def pem_file(path: str | None, option: str) -> str | None:
    """``path`` when it is a readable PEM file; a Java keystore (JKS, JCEKS, PKCS12) or anything else that is not
    PEM is refused naming ``option``."""
    if path is None:
        return None
    try:
        with open(os.path.expanduser(path), "rb") as f:
            head = f.read(4096)
    except OSError as e:
        raise OptionError(f"option {option}: cannot read {path}: {e.strerror}") from None
    if head[:4] in (b"\xfe\xed\xfe\xed", b"\xce\xce\xce\xce") or head[:1] == b"\x30":
        kind = {b"\xfe\xed\xfe\xed": "JKS", b"\xce\xce\xce\xce": "JCEKS"}.get(head[:4], "PKCS12 or DER")
        raise OptionError(f"option {option}: {path} is a Java keystore or binary certificate ({kind}), which only "
                          f"Java reads: give a PEM file instead ({KEYTOOL}; a client key: keytool -importkeystore "
                          f"-deststoretype PKCS12, then openssl pkcs12 -nodes)")
    if b"-----BEGIN " not in head:
        raise OptionError(f"option {option}: {path} is not a PEM file (no -----BEGIN line)")
    return path


def highest_protocol(value: str | None, option: str = "sslProtocol") -> str | None:
    """The highest TLS version of the connector's ``protocol`` (``TLS``: the newest, None; ``TLSv1.2``)."""
    if value is None:
        return None
    if value.strip().upper() not in PROTOCOLS:
        raise OptionError(f"option {option}: expected TLS, TLSv1.2 or TLSv1.3 (the connector's "
                          f"{PREFIX}protocol), got {value!r}")
    return PROTOCOLS[value.strip().upper()]


def client_context(ca_file: str | None, verify: bool, cert_file: str | None, key_password: str | None,
                   highest: str | None) -> Any:
    """The ``ssl.SSLContext`` of a CQL connection: the server's certificate checked against ``ca_file`` (else the
    system's CAs) unless ``verify`` is false, the client's certificate and key from ``cert_file``, TLS up to
    ``highest`` (``TLSv1_2``) when given."""
    import ssl

    ctx = ssl.create_default_context(cafile=ca_file)
    if not verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if cert_file is not None:
        try:
            ctx.load_cert_chain(cert_file, password=key_password)
        except ssl.SSLError as e:
            raise OptionError(f"option sslCertFile: {cert_file} does not hold a certificate and its private key "
                              f"(or option sslKeyPassword is wrong): {e.reason or e}") from None
    if highest is not None:
        ctx.maximum_version = getattr(ssl.TLSVersion, highest)
    return ctx
