"""kafka-python 3's protocol classes as an independent encoder and decoder of Kafka messages, for tests.

kafka-python generates its classes from its own copy of Kafka's JSON
definitions with its own code, so a request it encodes to the same bytes as
logtide's classes, or a response it decodes to the same values, checks
logtide's generated classes against another implementation.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from typing import Any


@functools.cache
def classes() -> dict[tuple[int, str], Any]:
    """kafka-python's message class of each (API key, "request" | "response")."""
    import kafka.protocol as protocol
    from kafka.protocol.api_message import ApiMessage
    out: dict[tuple[int, str], Any] = {}
    for info in pkgutil.walk_packages(protocol.__path__, "kafka.protocol."):
        if ".schemas" in info.name or info.name.endswith(("generate_stubs", ".old")) or ".old." in info.name:
            continue
        module = importlib.import_module(info.name)
        for name in dir(module):
            c = getattr(module, name)
            if isinstance(c, type) and issubclass(c, ApiMessage) and c is not ApiMessage and c._json is not None:
                out[(c.API_KEY, c.type)] = c
    return out


def knows(api_key: int, kind: str, version: int) -> bool:
    """Whether kafka-python defines this message in this version (its definitions drop Kafka's oldest ones)."""
    c = classes().get((api_key, kind))
    return c is not None and c.valid_versions[0] <= version <= c.valid_versions[1]


def encode_request(api_key: int, version: int, values: dict[str, Any]) -> bytes:
    """The request body kafka-python encodes from ``values`` (logtide's dict form)."""
    c = classes()[(api_key, "request")]
    return bytes(_container(c, values).encode(version=version))


def decode_response(api_key: int, version: int, body: bytes) -> dict[str, Any]:
    """A response body as kafka-python decodes it, as a dict of the fields of that version (tagged ones left out)."""
    c = classes()[(api_key, "response")]
    return _values(c.decode(body, version=version), version)


def _container(cls: Any, values: dict[str, Any]) -> Any:
    fields = cls._struct.fields
    kw = {}
    for key, v in values.items():
        f = fields.get(key)
        if f is None:
            continue
        if v is not None and f.is_struct_array():
            v = [_container(f.data_class, x) for x in v]
        elif v is not None and f.is_struct():
            v = _container(f.data_class, v)
        kw[key] = v
    return cls(**kw)


def _values(obj: Any, version: int) -> dict[str, Any]:
    out = {}
    for f in obj._struct._fields:
        if not f.for_version_q(version) or f._tag is not None:
            continue
        v = getattr(obj, f.name)
        if v is not None and f.is_struct_array():
            v = [_values(x, version) for x in v]
        elif v is not None and f.is_struct():
            v = _values(v, version)
        out[f.name] = v
    return out
