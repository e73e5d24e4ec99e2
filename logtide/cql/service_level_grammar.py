"""The grammar of ScyllaDB's service level statements (``createServiceLevelStatement`` ...
``listEffectiveServiceLevelStatement`` of its ``Cql.g``), as functions of the parser (``cql.parser``), which calls
them when a statement's object is ``SERVICE LEVEL`` (also written ``SERVICE_LEVEL``)."""

from __future__ import annotations

from typing import Any

from logtide.cql import service_level_ast as sl
from logtide.cql.tokens import IDENT, PUNCT, STRING


def at_service_level(p: Any, k: int = 0, plural: bool = False) -> bool:
    """Whether the parser stands on ``SERVICE LEVEL`` / ``SERVICE_LEVEL`` (``LEVELS`` with ``plural``)."""
    one, two = ("service_levels", "levels") if plural else ("service_level", "level")
    return p._at_kw(one, k=k) or (p._at_kw("service", k=k) and p._at_kw(two, k=k + 1))


def _skip_service_level(p: Any, plural: bool = False) -> None:
    one = "service_levels" if plural else "service_level"
    if not p._accept_kw(one):
        p._expect_kw("service")
        p._expect_kw("levels" if plural else "level")


def name(p: Any) -> str:
    """``serviceLevelOrRoleName``: an identifier (lower-cased), a quoted name or a string literal; never a bind
    marker."""
    tok = p._peek()
    if tok.kind == PUNCT and tok.value == "?":
        p._error_at(tok, "Bind variables cannot be used for service levels or role names")
    if tok.kind == STRING or (tok.kind == IDENT and tok.value == "default"):
        p.i += 1
        return tok.value
    return p._ident()


def create(p: Any) -> sl.CreateServiceLevel:
    """After CREATE: ``SERVICE LEVEL [IF NOT EXISTS] sl [WITH properties]``."""
    _skip_service_level(p)
    if_not_exists = p._if_not_exists()
    sl_name = name(p)
    options = p._properties() if p._accept_kw("with") else ()
    return sl.CreateServiceLevel(sl_name, options, if_not_exists)


def alter(p: Any) -> sl.AlterServiceLevel:
    """After ALTER: ``SERVICE LEVEL sl WITH properties``."""
    _skip_service_level(p)
    sl_name = name(p)
    p._expect_kw("with")
    return sl.AlterServiceLevel(sl_name, p._properties())


def drop(p: Any) -> sl.DropServiceLevel:
    """After DROP: ``SERVICE LEVEL [IF EXISTS] sl``."""
    _skip_service_level(p)
    if_exists = p._if_exists()
    return sl.DropServiceLevel(name(p), if_exists)


def attach(p: Any) -> sl.AttachServiceLevel:
    """``ATTACH SERVICE LEVEL sl TO role``."""
    p._expect_kw("attach")
    _skip_service_level(p)
    sl_name = name(p)
    p._expect_kw("to")
    return sl.AttachServiceLevel(sl_name, name(p))


def detach(p: Any) -> sl.DetachServiceLevel:
    """``DETACH SERVICE LEVEL FROM role``."""
    p._expect_kw("detach")
    _skip_service_level(p)
    p._expect_kw("from")
    return sl.DetachServiceLevel(name(p))


def at_list(p: Any) -> bool:
    """After LIST: whether a service level listing follows (not a permission or role listing)."""
    if at_service_level(p):
        return True
    if p._at_kw("all") and (at_service_level(p, 1, plural=True) or p._at_kw("attached", k=1)):
        return True
    return (p._at_kw("attached") or p._at_kw("effective")) and at_service_level(p, 1)


def listing(p: Any) -> Any:
    """After LIST: ``SERVICE LEVEL sl`` | ``ALL SERVICE LEVELS`` | ``ATTACHED SERVICE LEVEL OF role`` |
    ``ALL ATTACHED SERVICE LEVELS`` | ``EFFECTIVE SERVICE LEVEL OF role``."""
    if p._accept_kw("all"):
        if p._accept_kw("attached"):
            _skip_service_level(p, plural=True)
            return sl.ListAttachedServiceLevels()
        _skip_service_level(p, plural=True)
        return sl.ListServiceLevels()
    if p._accept_kw("attached"):
        _skip_service_level(p)
        p._expect_kw("of")
        return sl.ListAttachedServiceLevels(name(p))
    if p._accept_kw("effective"):
        _skip_service_level(p)
        p._expect_kw("of")
        return sl.ListEffectiveServiceLevel(name(p))
    _skip_service_level(p)
    return sl.ListServiceLevels(name(p))

