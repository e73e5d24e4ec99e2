"""What a Spark user sees when a logtide source refuses a read: its message, not a traceback through logtide.

Spark puts a Python data source's error into its own exception's message as the formatted Python
traceback (pyspark's own frames are dropped, the source's kept).  For logtide's expected errors
(:class:`~.options.OptionError`: bad options, a missing table; ``ConnectionError``: a server that
cannot be reached or refuses the login; ``CorruptRecord``: stored damage a read met) the frames say nothing to the user and push the message
far from Spark's error class, so the source's entry points re-raise them with a fresh traceback:
what Spark shows is ``[PYTHON_DATA_SOURCE_ERROR] ...: Traceback ... one frame ... OptionError: <message>``.
Anything else (a bug) keeps its full traceback.
"""

from __future__ import annotations

import functools
import types
from typing import Any, Callable, Iterator, TypeVar

from ..errors import CorruptRecord
from .options import OptionError

# CorruptRecord: a damaged changefeed record met by a local read (its message names changefeed, partition, offset)
USER_ERRORS = (OptionError, ConnectionError, CorruptRecord)
F = TypeVar("F", bound=Callable[..., Any])


def user_errors(fn: F) -> F:
    """Decorate a data source entry point (``schema``, ``reader``, ``latestOffset``, ``read``, ...): user
    errors it raises, also while iterating a generator it returns, leave with their message only."""

    @functools.wraps(fn)
    def entry(*args: Any, **kwargs: Any) -> Any:
        try:
            result = fn(*args, **kwargs)
        except USER_ERRORS as e:
            raise e.with_traceback(None) from None
        return _guarded(result) if isinstance(result, types.GeneratorType) else result

    return entry  # type: ignore[return-value]


def _guarded(gen: Iterator[Any]) -> Iterator[Any]:
    try:
        yield from gen
    except USER_ERRORS as e:
        raise e.with_traceback(None) from None


def login_refused(detail: str) -> str:
    """The reason for a refused login (CQL or Kafka SASL), naming the options to check."""
    return f"login refused ({detail}): check the options username and password"


def untrusted_certificate(detail: str) -> str:
    """The reason for a server certificate that does not verify, naming the option to set."""
    return (f"the server's TLS certificate is not trusted ({detail}): option sslCaFile must name the PEM bundle of "
            f"the CA that signed it (or the certificate itself when self-signed)")
