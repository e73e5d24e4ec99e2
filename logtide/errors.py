"""Errors raised by logtide, each carrying its CQL native-protocol error code.

The classes mirror Cassandra's exceptions (``SyntaxException``,
``InvalidRequest``, ``ConfigurationException``, ``AlreadyExists`` ...) so that
the shell and the server can report them exactly as Cassandra does.
"""

from __future__ import annotations


class CqlError(Exception):
    """Base of every error a CQL statement can raise; ``code`` is the protocol error code."""

    code: int = 0x0000
    name: str = "ServerError"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class ServerError(CqlError):
    """An unexpected failure inside logtide (protocol code 0x0000)."""

    code = 0x0000
    name = "ServerError"


class ProtocolError(CqlError):
    """A malformed native-protocol frame (0x000A)."""

    code = 0x000A
    name = "ProtocolError"


class AuthenticationError(CqlError):
    """Bad credentials (0x0100)."""

    code = 0x0100
    name = "AuthenticationFailed"


class SyntaxException(CqlError):
    """A statement that does not parse (0x2000); the message names line, column and token."""

    code = 0x2000
    name = "SyntaxException"


class Unauthorized(CqlError):
    """The logged-in role lacks a permission (0x2100)."""

    code = 0x2100
    name = "Unauthorized"


class InvalidRequest(CqlError):
    """A statement that parses but is not valid (0x2200)."""

    code = 0x2200
    name = "InvalidRequest"


class ConfigurationException(CqlError):
    """An invalid schema change or option (0x2300)."""

    code = 0x2300
    name = "ConfigurationException"


class AlreadyExists(CqlError):
    """CREATE of a keyspace, table or type that exists (0x2400)."""

    code = 0x2400
    name = "AlreadyExists"

    def __init__(self, message: str, keyspace: str = "", table: str = "") -> None:
        super().__init__(message)
        self.keyspace = keyspace
        self.table = table


class FunctionFailure(CqlError):
    """A function failed on its arguments (0x1400), e.g. ``fromJson()`` of text that is not JSON or
    not a value of the receiving type (ScyllaDB's function_execution_exception)."""

    code = 0x1400
    name = "FunctionFailure"

    def __init__(self, message: str, keyspace: str = "", function: str = "", arg_types: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.keyspace = keyspace
        self.function = function
        self.arg_types = arg_types


class Unprepared(CqlError):
    """EXECUTE of an unknown prepared statement id (0x2500)."""

    code = 0x2500
    name = "Unprepared"

    def __init__(self, message: str, statement_id: bytes = b"") -> None:
        super().__init__(message)
        self.statement_id = statement_id


class StorageLocked(CqlError):
    """A second writer process tried to open a data directory that is in use."""

    code = 0x0000
    name = "ServerError"


class DataDirectoryError(CqlError):
    """A data directory that cannot be opened as asked: missing, not a logtide database, damaged.

    Raised before any statement runs (``docs/durability.md``); the message names
    the directory and, where there is one, what to do about it."""

    code = 0x0000
    name = "ServerError"


class NoDatabase(DataDirectoryError):
    """A command that only reads was pointed at a directory that holds no logtide database."""


class NotADatabase(DataDirectoryError):
    """``logtide.db`` exists but is not a logtide database (empty, another program's file, garbage)."""


class OldFormat(DataDirectoryError):
    """A data directory of an older storage format that must be migrated before it is opened read-only."""


class LostCommits(DataDirectoryError):
    """The database holds fewer commits than were acknowledged: its write-ahead log was lost or truncated."""


class ReadOnlyDatabase(InvalidRequest):
    """A write on a database opened read-only (``logtide.open(path, readonly=True)``)."""


class StorageFailure(CqlError):
    """The storage layer failed (a full disk, an I/O error, no file descriptors left): nothing was applied.

    The statement itself was valid; retrying once the cause is gone may succeed.  The server answers
    with Cassandra's WriteFailure (0x1500) or ReadFailure (0x1300), which drivers report with this
    message, rather than as a server error (0x0000, kept for bugs).
    """

    code = 0x1500
    name = "WriteFailure"
    kind = "storage failure"  # what the server's log groups failures by

    def __init__(self, message: str, kind: str = "storage failure") -> None:
        super().__init__(message)
        self.kind = kind


class WriteFailure(StorageFailure):
    """A write (or schema change) that storage could not make durable (protocol WriteFailure, 0x1500)."""

    code = 0x1500
    name = "WriteFailure"


class ReadFailure(StorageFailure):
    """A read that storage could not serve (protocol ReadFailure, 0x1300)."""

    code = 0x1300
    name = "ReadFailure"

    # the protocol's extra fields of a read failure: this one node failed, at ONE
    consistency = 0x0001
    received = 0
    block_for = 1
    failures = 1
    data_present = False


class CorruptRecord(ReadFailure):
    """A stored record whose checksum (or format) does not verify; the message names keyspace, table and key.

    Cassandra answers a read that meets a corrupt SSTable with a read failure
    (its ``CorruptSSTableException`` fails the replica's read); logtide does the same."""

    def __init__(self, message: str, keyspace: str = "", table: str = "") -> None:
        super().__init__(message, "corrupt record")
        self.keyspace = keyspace
        self.table = table


class Overloaded(CqlError):
    """The server refuses work it has no room for right now (protocol Overloaded, 0x1001)."""

    code = 0x1001
    name = "Overloaded"


class RequestTimeout(CqlError):
    """A statement whose ``USING TIMEOUT`` deadline passed before it was done (ScyllaDB's
    ``read_write_timeout_exception``; message ``Operation timed out for ks.t - received only 0 responses
    from 1 CL=ONE.``).  A write that times out was not applied (docs/compatibility.md)."""

    # the protocol's extra fields: this one node did not answer, at ONE
    consistency = 0x0001
    received = 0
    block_for = 1

    def __init__(self, keyspace: str, table: str) -> None:
        super().__init__(f"Operation timed out for {keyspace}.{table} - received only {self.received} responses "
                         f"from {self.block_for} CL=ONE.")


class ReadTimeout(RequestTimeout):
    """A read that did not finish within its ``USING TIMEOUT`` (protocol ReadTimeout, 0x1200)."""

    code = 0x1200
    name = "ReadTimeout"
    data_present = False


class WriteTimeout(RequestTimeout):
    """A write not committed within its ``USING TIMEOUT`` (protocol WriteTimeout, 0x1100): nothing of it was
    applied.  ``write_type`` is the protocol's (SIMPLE, BATCH, UNLOGGED_BATCH, COUNTER)."""

    code = 0x1100
    name = "WriteTimeout"

    def __init__(self, keyspace: str, table: str, write_type: str = "SIMPLE") -> None:
        super().__init__(keyspace, table)
        self.write_type = write_type


class TruncateError(CqlError):
    """A TRUNCATE that failed, e.g. past its ``USING TIMEOUT`` (protocol TruncateError, 0x1003; ScyllaDB's
    ``truncate_exception``, message ``Error during truncate: ...``)."""

    code = 0x1003
    name = "TruncateError"


class CommandFailure(Exception):
    """A command-line failure that is not a CQL error (a bad argument, a refused request, a failed job).

    ``logtide.cli.main`` prints it as the one line ``logtide COMMAND: error: MESSAGE`` and exits
    with status 2, as it does for every other failure (README, "Errors")."""
