"""Statement classes of ScyllaDB's service levels (``cql3/statements/*service_level*``): frozen dataclasses that read
like the grammar, beside ``ast.py``.  Names are as the grammar's ``serviceLevelOrRoleName`` gives them (an
identifier lower-cased, a quoted name or a string literal as written)."""

from __future__ import annotations

from dataclasses import dataclass

from .ast import PropertyValue


@dataclass(frozen=True)
class CreateServiceLevel:
    """``CREATE SERVICE LEVEL [IF NOT EXISTS] sl [WITH option = value (AND ...)*]``."""

    name: str
    options: tuple[tuple[str, PropertyValue], ...] = ()
    if_not_exists: bool = False


@dataclass(frozen=True)
class AlterServiceLevel:
    """``ALTER SERVICE LEVEL sl WITH option = value (AND ...)*``."""

    name: str
    options: tuple[tuple[str, PropertyValue], ...]


@dataclass(frozen=True)
class DropServiceLevel:
    """``DROP SERVICE LEVEL [IF EXISTS] sl``."""

    name: str
    if_exists: bool = False


@dataclass(frozen=True)
class AttachServiceLevel:
    """``ATTACH SERVICE LEVEL sl TO role``."""

    service_level: str
    role: str


@dataclass(frozen=True)
class DetachServiceLevel:
    """``DETACH SERVICE LEVEL FROM role``."""

    role: str


@dataclass(frozen=True)
class ListServiceLevels:
    """``LIST SERVICE LEVEL sl`` (``name`` set) or ``LIST ALL SERVICE LEVELS`` (``name`` None)."""

    name: str | None = None


@dataclass(frozen=True)
class ListAttachedServiceLevels:
    """``LIST ATTACHED SERVICE LEVEL OF role`` (``role`` set) or ``LIST ALL ATTACHED SERVICE LEVELS``."""

    role: str | None = None


@dataclass(frozen=True)
class ListEffectiveServiceLevel:
    """``LIST EFFECTIVE SERVICE LEVEL OF role``: the options a role gets from the service levels attached to it and
    to the roles granted to it."""

    role: str


SERVICE_LEVEL_STATEMENTS = (CreateServiceLevel, AlterServiceLevel, DropServiceLevel, AttachServiceLevel,
                            DetachServiceLevel, ListServiceLevels, ListAttachedServiceLevels, ListEffectiveServiceLevel)
