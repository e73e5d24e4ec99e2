"""Error messages are worded exactly as cqlsh words the driver's exceptions."""

from __future__ import annotations

import io

import pytest
from cassandra.protocol import ErrorMessage, write_int, write_string

from logtide.errors import (AlreadyExists, ConfigurationException, CqlError, InvalidRequest, ProtocolError,
                            ReadTimeout, ServerError, SyntaxException, Unauthorized, WriteTimeout)
from logtide.shell import cqlsh_describe_error_text, cqlsh_error_text


def from_frame(err: CqlError) -> Exception:
    """What cassandra-driver raises for the ERROR frame logtide's server would send."""
    buf = io.BytesIO()
    write_int(buf, err.code)
    write_string(buf, err.message)
    if isinstance(err, AlreadyExists):
        write_string(buf, err.keyspace)
        write_string(buf, err.table)
    buf.seek(0)
    return ErrorMessage.recv_body(buf, 4).to_exception()


def cqlsh_wording(exc: Exception) -> str:
    """cqlsh's perform_simple_statement: class name, ': ', the exception's message."""
    return str(exc.__class__.__name__) + ": " + (exc.message if hasattr(exc, "message") else str(exc))


ERRORS = [
    (InvalidRequest("unconfigured table foo"),
     'InvalidRequest: Error from server: code=2200 [Invalid query] message="unconfigured table foo"'),
    (SyntaxException("line 1:0 no viable alternative at input 'x' ([x])"),
     "SyntaxException: line 1:0 no viable alternative at input 'x' ([x])"),
    (ConfigurationException("Invalid CDC option: x"), "ConfigurationException: Invalid CDC option: x"),
    (AlreadyExists("Cannot add already existing table", "ks", "t"), "AlreadyExists: Table 'ks.t' already exists"),
    (AlreadyExists("Cannot add existing keyspace", "ks"), "AlreadyExists: Keyspace 'ks' already exists"),
    (Unauthorized("no"), 'Unauthorized: Error from server: code=2100 [Unauthorized] message="no"'),
    (ServerError("boom"), "ServerError: boom"),
    (ProtocolError("bad frame"), "ProtocolException: bad frame"),
]


@pytest.mark.parametrize("err,expected", ERRORS, ids=[type(e).__name__ + str(i) for i, (e, _) in enumerate(ERRORS)])
def test_error_wording(err: CqlError, expected: str) -> None:
    assert cqlsh_error_text(err) == expected
    assert cqlsh_wording(from_frame(err)) == expected


def test_describe_errors_show_only_the_message() -> None:
    assert cqlsh_describe_error_text(InvalidRequest("Keyspace 'x' not found")) == "Keyspace 'x' not found"


def test_already_exists_without_names_keeps_message() -> None:
    assert cqlsh_error_text(AlreadyExists("Type ks.ut already exists")) == (
        "ConfigurationException: Type ks.ut already exists")


@pytest.mark.parametrize("err", [ReadTimeout("ks", "t"), WriteTimeout("ks", "t", "BATCH")],
                         ids=["read", "write"])
def test_timeouts_are_worded_as_cqlsh_words_the_servers_frame(err: CqlError) -> None:
    from logtide.server.messages import error
    _, body = error(err)  # the ERROR body the server sends, with the timeout's fields
    from_server = ErrorMessage.recv_body(io.BytesIO(body), 4).to_exception()
    assert cqlsh_error_text(err) == cqlsh_wording(from_server)
    assert cqlsh_error_text(err).startswith(f"{type(err).__name__}: Error from server: code={err.code:04x} ")
