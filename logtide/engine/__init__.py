"""The engine: a statement's way through the database as explicit stages, one idea a module.

A write (docs/architecture.md, "A write"): ``plan`` (1, tables, timestamp and conditions under the catalog as
of the commit; ``lwt`` checks conditions) -> ``touched`` (2, read: the touched rows, once) -> ``plan`` (3,
build: ``mutation.builder``) -> ``commit`` (4 capture, 5 apply, 6 changefeed records; the group commit is
``storage.group_commit``).  A read: ``select``.  Schema changes: ``ddl``.  The database's lifecycle:
``database``.  Nothing here imports ``logtide.session``, which delegates to these modules.
"""
