"""Kafka's own client settings for the ``logtide-changefeed`` source and ``logtide pipeline lakehouse``
(docs/spark.md "Kafka client files").

A Kafka user keeps a login and TLS settings in a ``client.properties`` file, which Kafka's command-line tools read
with ``--command-config FILE``, and writes the login as a Java JAAS line in ``sasl.jaas.config``.  The source's
Kafka client is librdkafka, which has its own names: this module reads a properties file (Java's format), parses a
JAAS line strictly (PlainLoginModule or ScramLoginModule, ``username`` and ``password``), and turns Java's
settings into librdkafka's.  A Java keystore (``ssl.truststore.*``, ``ssl.keystore.*`` of a type other than PEM)
is refused naming the PEM setting to give instead, as the CQL side refuses the connector's keystores.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import Mapping

from .option_error import OptionError
from .tls import KEYTOOL, pem_file

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
MECHANISMS = {PLAIN_MODULE: ("PLAIN",), SCRAM_MODULE: ("SCRAM-SHA-256", "SCRAM-SHA-512")}
FLAGS = ("required", "requisite", "sufficient", "optional")  # JAAS control flags, as Kafka's JaasConfig takes them
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
JAAS_EXAMPLE = f'{PLAIN_MODULE} required username="USER" password="PASSWORD";'
# settings whose value is secret: never repeated in a message
SECRETS = ("sasl.jaas.config", "sasl.password", "ssl.key.password", "ssl.truststore.password",
           "ssl.keystore.password")


@dataclass(frozen=True)
class JaasLogin:
    """The login of a ``sasl.jaas.config`` line: its login module, user name and password."""

    module: str
    username: str
    password: str


def _jaas_tokens(text: str, where: str) -> list[str]:
    """The words, ``=``, ``;`` and quoted strings (marked by a leading ``"``) of a JAAS line."""
    tokens: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch in "=;":
            tokens.append(ch)
            i += 1
        elif ch == '"':
            out, i = ['"'], i + 1
            while i < n and text[i] != '"':
                if text[i] == "\\" and i + 1 < n:
                    i += 1
                out.append(text[i])
                i += 1
            if i >= n:
                raise OptionError(f"{where}: malformed JAAS line: a quoted value is not closed "
                                  f"(expected {JAAS_EXAMPLE})")
            tokens.append("".join(out))
            i += 1
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in '=;"':
                j += 1
            tokens.append(text[i:j])
            i = j
    return tokens


def parse_jaas(text: str, where: str) -> JaasLogin:
    """A Kafka client's ``sasl.jaas.config``: ``<LoginModule> <flag> username="..." password="...";`` with
    Kafka's PlainLoginModule or ScramLoginModule, exactly one module, values quoted (or bare words) as Kafka's
    JaasConfig reads them.  Anything else is one OptionError naming ``where`` (never repeating the password)."""
    def bad(why: str) -> OptionError:
        return OptionError(f"{where}: malformed JAAS line: {why} (expected {JAAS_EXAMPLE}, or the ScramLoginModule "
                           f"alike)")

    tokens = _jaas_tokens(text, where)
    if not tokens:
        raise bad("it is empty")
    module = tokens[0]
    if module.startswith('"') or module in ("=", ";"):
        raise bad("it does not begin with a login module's class name")
    if module not in MECHANISMS:
        raise bad(f"login module {module} is not one logtide's Kafka endpoint serves (PlainLoginModule, "
                  f"ScramLoginModule)")
    if len(tokens) < 2 or tokens[1].lower() not in FLAGS:
        raise bad(f"the login module must be followed by a control flag ({', '.join(FLAGS)})")
    found: dict[str, str] = {}
    i = 2
    while i < len(tokens) and tokens[i] != ";":
        key = tokens[i]
        if key == "=" or key.startswith('"'):
            raise bad(f"expected an option name, got {key!r}")
        if i + 2 >= len(tokens) or tokens[i + 1] != "=" or tokens[i + 2] in ("=", ";"):
            raise bad(f"option {key} has no value (expected {key}=\"...\")")
        if key in found:
            raise bad(f"option {key} is given twice")
        value = tokens[i + 2]
        found[key] = value[1:] if value.startswith('"') else value
        i += 3
    if i >= len(tokens):
        raise bad("the line does not end with ';'")
    if i != len(tokens) - 1:
        raise bad("more than one login module (a Kafka client takes exactly one)")
    missing = [k for k in ("username", "password") if k not in found]
    if missing:
        raise bad(f"no {' and no '.join(missing)}")
    return JaasLogin(module, found["username"], found["password"])


def _unescape(text: str) -> str:
    """Java properties escapes: ``\\t``, ``\\n``, ``\\r``, ``\\f``, ``\\uXXXX``, and ``\\x`` for any other x."""
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 >= len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u" and i + 6 <= len(text):
            try:
                out.append(chr(int(text[i + 2:i + 6], 16)))
                i += 6
                continue
            except ValueError:
                pass
        out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(nxt, nxt))
        i += 2
    return "".join(out)


def parse_properties(text: str, where: str) -> dict[str, str]:
    """A Java properties file (``key=value``, ``key: value`` or ``key value``; ``#``/``!`` comments; a line
    ending in a backslash continues), as Kafka's tools read ``--command-config``."""
    logical: list[tuple[int, str]] = []
    pending: str | None = None
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.lstrip()
        if pending is None:
            if not line or line[0] in "#!":
                continue
            start = number
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending = (pending or "") + line[:-1]
            continue
        logical.append((start, (pending or "") + line))
        pending = None
    if pending is not None:
        logical.append((start, pending))
    out: dict[str, str] = {}
    for number, line in logical:
        i = 0
        while i < len(line) and line[i] not in "=: \t\f":
            i += 2 if line[i] == "\\" else 1
        key = _unescape(line[:i])
        rest = line[i:].lstrip(" \t\f")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t\f")
        if not key:
            raise OptionError(f"{where} line {number}: expected KEY=VALUE")
        out[key] = _unescape(rest)
    return out


def read_command_config(path: str) -> dict[str, str]:
    """The settings of a Kafka client properties file (``--command-config FILE``).  A file holding a password
    (``sasl.jaas.config``, ``sasl.password``, ``ssl.key.password``) must be the user's own and private, as the
    credentials file (docs/spark.md "Logins")."""
    from .credentials import file_is_private

    where = f"--command-config {path}"
    try:
        st = os.stat(path)
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise OptionError(f"{where}: cannot read it: {e.strerror}") from None
    except UnicodeDecodeError:
        raise OptionError(f"{where}: not a text file (a Kafka client properties file)") from None
    props = parse_properties(text, where)
    if any(k in props for k in ("sasl.jaas.config", "sasl.password", "ssl.key.password")) and not file_is_private(
            st, os.getuid()):
        mode = stat.S_IMODE(st.st_mode)
        why = "is owned by another user" if st.st_uid != os.getuid() else f"may be read by others (mode {mode:04o})"
        raise OptionError(f"{where}: the file holds a password and {why}: it must be yours and private "
                          f"(chmod 600 {path})")
    return props


def librdkafka_settings(settings: Mapping[str, str], name: Mapping[str, str]) -> dict[str, str]:
    """Java client settings (lower-case keys without a prefix; ``name[key]`` is how a message names each) as
    librdkafka's: the JAAS login becomes ``sasl.username``/``sasl.password`` (and ``sasl.mechanism`` PLAIN for the
    PlainLoginModule), a PEM trust store ``ssl.ca.location``; Java keystores are refused naming the PEM setting;
    the other settings pass as they are (librdkafka refuses those it does not know)."""
    out: dict[str, str] = {}
    s = dict(settings)
    protocol = s.get("security.protocol")
    if protocol is not None:
        if protocol.strip().upper() not in PROTOCOLS:
            raise OptionError(f"{name['security.protocol']}: expected one of {', '.join(PROTOCOLS)}, got {protocol!r}")
        s["security.protocol"] = protocol.strip().upper()
    mechanism = s.get("sasl.mechanism")
    if mechanism is not None:
        known = sorted({m for ms in MECHANISMS.values() for m in ms})
        if mechanism.strip().upper() not in known:
            raise OptionError(f"{name['sasl.mechanism']}: expected one of {', '.join(known)} (the mechanisms "
                              f"logtide's Kafka endpoint serves), got {mechanism!r}")
        s["sasl.mechanism"] = mechanism = mechanism.strip().upper()
    for store, pem in (("truststore", "ssl.ca.location"), ("keystore", "ssl.certificate.location and "
                                                                          "ssl.key.location")):
        kind = s.pop(f"ssl.{store}.type", None)
        if kind is not None and kind.strip().upper() != "PEM":
            raise OptionError(f"{name[f'ssl.{store}.type']}: {kind.strip().upper()} is a Java keystore, which only "
                              f"Java reads: give {pem} (PEM files) instead ({KEYTOOL})")
        if f"ssl.{store}.password" in s:
            raise OptionError(f"{name[f'ssl.{store}.password']}: a Java keystore's password: give {pem} (PEM files, "
                              f"{'no password' if store == 'truststore' else 'the key passphrase in ssl.key.password'})"
                              f" instead")
        location = s.pop(f"ssl.{store}.location", None)
        if location is not None:
            if kind is None:
                raise OptionError(f"{name[f'ssl.{store}.location']}: a Java keystore (JKS unless "
                                  f"ssl.{store}.type=PEM), which only Java reads: give {pem} (PEM) instead")
            pem_file(location, name[f"ssl.{store}.location"])
            if store == "truststore":
                out["ssl.ca.location"] = location
            else:
                out.update({"ssl.certificate.location": location, "ssl.key.location": location})
    if "ssl.ca.location" in s:
        pem_file(s["ssl.ca.location"], name["ssl.ca.location"])
    if s.get("ssl.endpoint.identification.algorithm", None) == "":
        s["ssl.endpoint.identification.algorithm"] = "none"  # Java's empty value: no host name check
    jaas = s.pop("sasl.jaas.config", None)
    if jaas is not None:
        login = parse_jaas(jaas, name["sasl.jaas.config"])
        allowed = MECHANISMS[login.module]
        if mechanism is None:
            if login.module == SCRAM_MODULE:
                raise OptionError(f"{name['sasl.jaas.config']}: the ScramLoginModule needs sasl.mechanism "
                                  f"SCRAM-SHA-256 or SCRAM-SHA-512")
            s["sasl.mechanism"] = "PLAIN"
        elif mechanism not in allowed:
            raise OptionError(f"{name['sasl.mechanism']}: {mechanism} does not go with the "
                              f"{login.module.rsplit('.', 1)[1]} of sasl.jaas.config (expected {' or '.join(allowed)})")
        for key in ("sasl.username", "sasl.password"):
            if key in s:
                raise OptionError(f"{name[key]} and {name['sasl.jaas.config']} both give the login: give one")
        out.update({"sasl.username": login.username, "sasl.password": login.password})
    out.update(s)
    return out


LOGIN_KEYS = ("sasl.jaas.config", "sasl.username", "sasl.password")
