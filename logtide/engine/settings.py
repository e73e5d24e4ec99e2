"""The settings ``system.config`` lists (``live_config``): ScyllaDB's names for what logtide really has.

Each is backed by what the database or ``logtide serve`` does: the row TTL's scan period, the token layout,
the address and port served, authentication, and the CQL dialect switches ScyllaDB has for Cassandra
compatibility.  Settings that ScyllaDB has and logtide has nothing behind (compaction, caches, the REST API)
are not listed (``docs/server.md``, "system.config").
"""

from __future__ import annotations

from typing import Any

from ..live_config import LiveConfig, Setting
from .row_expiry import DEFAULT_PERIOD

TTL_PERIOD = "alternator_ttl_period_in_seconds"
DUPLICATE_BIND_NAMES = "cql_duplicate_bind_variable_names_refer_to_same_variable"
IN_UPPERCASE = "cql_in_bind_variable_name_uses_uppercase_operator"
SPECULATIVE_RETRY_DEFAULT = "speculative_retry_user_table_default"


def _positive(value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{TTL_PERIOD} must be a positive number of seconds, got {value!r}")


def database_settings(vnodes: int) -> LiveConfig:
    """The settings of a database opened with ``vnodes`` tokens, at their defaults (``logtide serve`` sets the
    ones its options give)."""
    config = LiveConfig()
    config.define(Setting(TTL_PERIOD, "double", False,
                          "The period of the per-row TTL's expiration scan: every table with a TTL column is "
                          "scanned once in that time (logtide serve --alternator-ttl-period-in-seconds)."),
                  DEFAULT_PERIOD, _positive)
    config.define(Setting("num_tokens", "integer", False,
                          "The number of tokens (vnodes) of this node (--vnodes)."), vnodes)
    config.define(Setting(DUPLICATE_BIND_NAMES, "bool", True,
                          "A bind variable name that appears twice in a statement names one variable (false: each "
                          "occurrence is a variable of its own, as in Cassandra)."), True)
    config.define(Setting(IN_UPPERCASE, "bool", True,
                          "The bind variable of an IN restriction is named IN(column) (false: in(column), as in "
                          "Cassandra)."), True)
    config.define(Setting(SPECULATIVE_RETRY_DEFAULT, "string", True,
                          "The speculative_retry of a table, view, index or CDC log created without one (tables "
                          "created before a change keep theirs; an invalid value is ignored)."),
                  "99.0PERCENTILE")
    config.define(Setting("experimental_features", "string list", False,
                          "The experimental ScyllaDB features that are on: user-defined functions (in Lua)."),
                  ["udf"])
    config.define(Setting("restrict_dtcs", "string", False,
                          "DateTieredCompactionStrategy is refused (logtide knows no such class)."), "true")
    config.define(Setting("listen_address", "string", False, "The address the CQL server listens on (--host)."),
                  "127.0.0.1")
    config.define(Setting("rpc_address", "string", False, "The address CQL clients connect to (--host)."),
                  "127.0.0.1")
    config.define(Setting("native_transport_port", "integer", False, "The CQL port (--port)."), 9042)
    config.define(Setting("authenticator", "string", False,
                          "PasswordAuthenticator with --auth, else AllowAllAuthenticator."), "AllowAllAuthenticator")
    config.define(Setting("authorizer", "string", False,
                          "CassandraAuthorizer with --auth, else AllowAllAuthorizer."), "AllowAllAuthorizer")
    return config
