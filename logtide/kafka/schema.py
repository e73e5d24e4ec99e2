"""Message classes generated from Kafka's own JSON message definitions (``definitions/``, Apache-2.0).

The definitions are Apache Kafka's ``clients/src/main/resources/common/message/*.json``,
vendored unchanged beside Kafka's LICENSE and NOTICE (``definitions/README.md``
names the commit).  A definition lists each field with the versions it exists
in (``"versions": "3+"``), the versions in which it may be null
(``nullableVersions``) and, for a tagged field, its tag (``taggedVersions``,
``tag``); the message gives its ``validVersions`` and ``flexibleVersions``
(KIP-482: compact strings, arrays and bytes, and tagged fields after every
struct).  ``generate`` makes one class per version (``FetchRequest_v12``)
whose ``decode``/``encode`` read and write plain dicts keyed by each field's
name in snake_case (``MaxWaitMs`` -> ``max_wait_ms``).  A decoded dict holds
every field of the message, with its default when the version lacks it (as
Kafka's generated Java classes do), so a handler reads ``rebalance_timeout_ms``
from a JoinGroup v0 as -1.  A field a response dict leaves out is written
with its default; a tagged field is written only when it differs from its
default.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar

from .codec import ZERO_UUID, MalformedFrame, Reader, Writer

DEFINITIONS = Path(__file__).parent / "definitions"
NO_MAX = 1 << 15  # "N+": every version from N on (versions are int16)


@dataclass(frozen=True)
class Versions:
    """A version range of a definition: ``"3+"``, ``"0-7"``, ``"5"`` or ``"none"`` (empty)."""

    lo: int
    hi: int  # inclusive; NO_MAX for "N+"

    @classmethod
    def parse(cls, text: str | None) -> "Versions":
        if text is None or text == "none":
            return NONE
        text = text.strip()
        if text.endswith("+"):
            return cls(int(text[:-1]), NO_MAX)
        lo, _, hi = text.partition("-")
        return cls(int(lo), int(hi or lo))

    def __contains__(self, version: int) -> bool:
        return self.lo <= version <= self.hi

    def intersect(self, other: "Versions") -> "Versions":
        return Versions(max(self.lo, other.lo), min(self.hi, other.hi))


NONE = Versions(1, 0)


_WORD_START = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def snake_case(name: str) -> str:
    """A Kafka field name as a dict key: ``ThrottleTimeMs`` -> ``throttle_time_ms``."""
    return _WORD_START.sub("_", name).lower()


@dataclass(frozen=True)
class FieldDef:
    """One field as a definition gives it."""

    name: str
    type: str  # "int32", "string", "[]int32", "[]FetchTopic", "FetchTopic" (a struct), ...
    versions: Versions
    nullable: Versions
    tagged: Versions
    tag: int | None
    default: str | None
    fields: tuple["FieldDef", ...]  # a struct's (or array of structs') fields
    flexible: Versions | None  # a field's own flexibleVersions (the request header's ClientId: "none")
    key: str  # the dict key: the name in snake_case


@dataclass(frozen=True)
class MessageDef:
    """One definition file: a request, a response or a header."""

    name: str
    api_key: int | None
    type: str  # "request" | "response" | "header"
    valid: Versions
    flexible: Versions
    fields: tuple[FieldDef, ...]


def parse_definition(text: str) -> MessageDef:
    """A definition from its text (Kafka's JSON with whole-line ``//`` comments)."""
    doc = json.loads("\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//")))
    common = {s["name"]: s for s in doc.get("commonStructs", [])}

    def field(d: dict) -> FieldDef:
        sub = d.get("fields")
        if sub is None:
            struct = common.get(d["type"].removeprefix("[]"))
            sub = struct["fields"] if struct is not None else []
        return FieldDef(d["name"], d["type"], Versions.parse(d.get("versions")),
                        Versions.parse(d.get("nullableVersions")), Versions.parse(d.get("taggedVersions")),
                        d.get("tag"), d.get("default"), tuple(field(s) for s in sub),
                        Versions.parse(d["flexibleVersions"]) if "flexibleVersions" in d else None,
                        snake_case(d["name"]))

    return MessageDef(doc["name"], doc.get("apiKey"), doc["type"], Versions.parse(doc.get("validVersions")),
                      Versions.parse(doc.get("flexibleVersions")), tuple(field(f) for f in doc["fields"]))


def load(name: str, directory: Path = DEFINITIONS) -> MessageDef:
    """The vendored definition ``definitions/<name>.json``."""
    return parse_definition((directory / f"{name}.json").read_text(encoding="utf-8"))


# -- codecs: one per field type and version -----------------------------------------------------------


class Codec:
    """Reads and writes one value; ``min_size`` is the fewest bytes any value of it takes."""

    min_size: int = 0

    def read(self, r: Reader) -> Any:
        raise NotImplementedError

    def write(self, w: Writer, v: Any) -> None:
        raise NotImplementedError

    def default(self) -> Any:
        """A fresh default value."""
        raise NotImplementedError


class Scalar(Codec):
    """A fixed-size number, bool or uuid."""

    def __init__(self, read: Callable[[Reader], Any], write: Callable[[Writer, Any], None], size: int,
                 default: Any) -> None:
        self.read = read  # type: ignore[method-assign]
        self._write = write
        self.min_size = size
        self._default = default

    def write(self, w: Writer, v: Any) -> None:
        self._write(w, self._default if v is None else v)

    def default(self) -> Any:
        return self._default


class Text(Codec):
    """A string (``bytes=False``) or bytes/records, compact in flexible versions."""

    def __init__(self, is_bytes: bool, compact: bool, nullable: bool, default: Any) -> None:
        self.is_bytes, self.compact, self.nullable, self._default = is_bytes, compact, nullable, default
        self.min_size = 1 if compact else 4 if is_bytes else 2

    def read(self, r: Reader) -> Any:
        if self.is_bytes:
            return r.bytes_(self.nullable, self.compact)
        return r.string(self.nullable, self.compact)

    def write(self, w: Writer, v: Any) -> None:
        if v is None and not self.nullable:
            v = b"" if self.is_bytes else ""
        if self.is_bytes:
            w.bytes_(v, self.compact)
        else:
            w.string(v, self.compact)

    def default(self) -> Any:
        return self._default


class Array(Codec):
    """An array of one element codec; its length bounded by the bytes left (``Reader.array_length``)."""

    def __init__(self, element: Codec, compact: bool, nullable: bool, default_null: bool) -> None:
        self.element, self.compact, self.nullable, self.default_null = element, compact, nullable, default_null
        self.min_size = 1 if compact else 4

    def read(self, r: Reader) -> list | None:
        n = r.array_length(self.nullable, self.compact, self.element.min_size)
        if n is None:
            return None
        read = self.element.read
        return [read(r) for _ in range(n)]

    def write(self, w: Writer, v: Any) -> None:
        if v is None and not self.nullable:
            v = ()
        w.array_length(None if v is None else len(v), self.compact)
        if v:
            write = self.element.write
            for item in v:
                write(w, item)

    def default(self) -> list | None:
        return None if self.default_null else []


class Struct(Codec):
    """A struct (a message body, an array element or a struct field) in one version."""

    def __init__(self, regular: list[tuple[str, Codec]], tagged: list[tuple[int, str, Codec]],
                 absent: list[tuple[str, Codec]], flexible: bool) -> None:
        self.regular = tuple(regular)
        self.tagged = tuple(sorted(tagged))
        self.by_tag = {tag: (key, codec) for tag, key, codec in tagged}
        self.absent = tuple(absent)
        self.flexible = flexible
        self.keys = tuple(k for k, _ in regular) + tuple(k for _, k, _ in self.tagged)
        self.min_size = sum(c.min_size for _, c in regular) + (1 if flexible else 0)
        self._tagged_defaults = {}
        for tag, key, codec in self.tagged:
            w = Writer()
            codec.write(w, codec.default())
            self._tagged_defaults[tag] = bytes(w.buf)

    def read(self, r: Reader) -> dict[str, Any]:
        out = {key: codec.read(r) for key, codec in self.regular}
        if self.flexible:
            self._read_tagged(r, out)
        for key, codec in self.absent:
            out[key] = codec.default()
        return out

    def _read_tagged(self, r: Reader, out: dict[str, Any]) -> None:
        count = r.uvarint()
        if count > r.remaining():
            raise MalformedFrame(f"{count} tagged fields in {r.remaining()} bytes")
        for _ in range(count):
            tag, size = r.uvarint(), r.uvarint()
            known = self.by_tag.get(tag)
            if known is None:  # a tag this version does not know: skipped, as Kafka does
                r._take(size)
                continue
            end = r.pos + size
            if end > r.end:
                raise MalformedFrame(f"tagged field {tag} of {size} bytes past the end of the frame")
            saved, r.end = r.end, end
            try:
                out[known[0]] = known[1].read(r)
                if r.pos != end:
                    raise MalformedFrame(f"tagged field {tag} is {size} bytes but its value took {r.pos - end + size}")
            finally:
                r.end = saved
        for _tag, key, codec in self.tagged:
            if key not in out:
                out[key] = codec.default()

    def write(self, w: Writer, v: Any) -> None:
        get = v.get if v else {}.get
        for key, codec in self.regular:
            value = get(key)
            codec.write(w, codec.default() if value is None and key not in (v or ()) else value)
        if self.flexible:
            self._write_tagged(w, get)

    def _write_tagged(self, w: Writer, get: Callable[[str], Any]) -> None:
        present = []
        for tag, key, codec in self.tagged:
            value = get(key)
            if value is None:
                continue
            sub = Writer()
            codec.write(sub, value)
            if bytes(sub.buf) != self._tagged_defaults[tag]:
                present.append((tag, sub.buf))
        w.uvarint(len(present))
        for tag, data in present:
            w.uvarint(tag)
            w.uvarint(len(data))
            w.buf += data

    def default(self) -> dict[str, Any]:
        out = {key: codec.default() for key, codec in self.regular}
        out.update({key: codec.default() for _, key, codec in self.tagged})
        out.update({key: codec.default() for key, codec in self.absent})
        return out


def _int_default(text: str | None) -> int:
    return 0 if text in (None, "") else int(text, 0)


_FIXED: dict[str, tuple[Callable[[Reader], Any], Callable[[Writer, Any], None], int]] = {
    "int8": (Reader.int8, Writer.int8, 1), "int16": (Reader.int16, Writer.int16, 2),
    "uint16": (Reader.uint16, Writer.uint16, 2), "int32": (Reader.int32, Writer.int32, 4),
    "uint32": (Reader.uint32, Writer.uint32, 4), "int64": (Reader.int64, Writer.int64, 8),
    "float64": (Reader.float64, Writer.float64, 8), "bool": (Reader.boolean, Writer.boolean, 1),
    "uuid": (Reader.uuid, Writer.uuid, 16),
}


def _scalar(type_name: str, default: str | None) -> Codec:
    read, write, size = _FIXED[type_name]
    if type_name == "bool":
        value: Any = default == "true"
    elif type_name == "float64":
        value = float(default) if default else 0.0
    elif type_name == "uuid":
        value = ZERO_UUID if not default or default == "AAAAAAAAAAAAAAAAAAAAAA" else uuid.UUID(default)
    else:
        value = _int_default(default)
    return Scalar(read, write, size, value)


def field_codec(f: FieldDef, version: int, flexible: bool, type_name: str | None = None) -> Codec:
    """The codec of field ``f`` in ``version`` (``type_name``: an array's element type)."""
    if f.flexible is not None:
        flexible = version in f.flexible
    t = f.type if type_name is None else type_name
    nullable = type_name is None and version in f.nullable
    if t.startswith("[]"):
        element = field_codec(f, version, flexible, t[2:])
        return Array(element, flexible, nullable, f.default == "null")
    if t in _FIXED:
        return _scalar(t, f.default if type_name is None else None)
    if t in ("string", "bytes", "records"):
        is_bytes = t != "string"
        if type_name is None and f.default == "null":
            default: Any = None
        elif is_bytes:
            default = b""
        else:
            default = f.default if type_name is None and f.default is not None else ""
        return Text(is_bytes, flexible, nullable, default)
    return struct_codec(f.fields, version, flexible)  # a struct type


def struct_codec(fields: tuple[FieldDef, ...], version: int, flexible: bool) -> Struct:
    """The fields of a struct as they are in ``version``: regular, tagged, and absent (defaults only)."""
    regular, tagged, absent = [], [], []
    for f in fields:
        codec = field_codec(f, version, flexible)
        if version not in f.versions:
            absent.append((f.key, codec))
        elif flexible and version in f.tagged:
            assert f.tag is not None, f.name
            tagged.append((f.tag, f.key, codec))
        else:
            regular.append((f.key, codec))
    return Struct(regular, tagged, absent, flexible)


# -- generated classes ---------------------------------------------------------------------------------


class Message:
    """One message in one version; the classes are made by ``generate`` (``FetchRequest_v12``)."""

    API_KEY: ClassVar[int]
    API_VERSION: ClassVar[int]
    FLEXIBLE: ClassVar[bool]
    CODEC: ClassVar[Struct]
    DEFINITION: ClassVar[MessageDef]

    @classmethod
    def decode(cls, r: Reader) -> dict[str, Any]:
        try:
            return cls.CODEC.read(r)
        except (MalformedFrame, RecursionError):
            raise
        except (ValueError, OverflowError) as e:
            raise MalformedFrame(str(e)) from None

    @classmethod
    def encode(cls, values: dict[str, Any], w: Writer | None = None) -> Writer:
        w = w or Writer()
        cls.CODEC.write(w, values)
        return w


def message_class(d: MessageDef, version: int) -> type[Message]:
    """The class of definition ``d`` in ``version``."""
    flexible = version in d.flexible
    return type(f"{d.name}_v{version}", (Message,), {
        "API_KEY": d.api_key, "API_VERSION": version, "FLEXIBLE": flexible,
        "CODEC": struct_codec(d.fields, version, flexible), "DEFINITION": d,
        "__doc__": f"{d.name} version {version} (API key {d.api_key}{', flexible' if flexible else ''}), "
                   f"generated from definitions/{d.name}.json.",
    })


@dataclass(frozen=True)
class Api:
    """A served API: its key, the versions served and the classes generated for each."""

    key: int
    name: str
    min_version: int
    max_version: int
    flexible: Versions
    requests: dict[int, type[Message]]
    responses: dict[int, type[Message]]

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible


def generate(request: MessageDef, response: MessageDef, versions: tuple[int, int]) -> Api:
    """``<Name>Request_vN`` and ``<Name>Response_vN`` for every version served (within both definitions')."""
    lo, hi = versions
    if request.api_key != response.api_key or request.flexible != response.flexible:
        raise ValueError(f"{request.name} and {response.name} do not describe one API")
    if lo not in request.valid or hi not in request.valid or hi not in response.valid:
        raise ValueError(f"{request.name} defines versions {request.valid}, not {lo}-{hi}")
    assert request.api_key is not None
    return Api(request.api_key, request.name.removesuffix("Request"), lo, hi, request.flexible,
               {v: message_class(request, v) for v in range(lo, hi + 1)},
               {v: message_class(response, v) for v in range(lo, hi + 1)})
