"""The engine: a statement's way through the database as explicit stages, one idea a module.

A write (docs/architecture.md, "A write", whose stage numbers these are): ``plan`` (2 and 3.1, tables and
timestamp under the catalog as of the commit) -> ``touched`` (3.2, read before the write) -> ``lwt`` (3.3,
conditions) -> ``plan`` (3.4, build: ``mutation.builder``) -> ``commit`` (3.5 capture, ``capture``; 3.6 the CDC
log, ``cdc.capture``; 3.7 apply; 3.8 the changefeeds' records, ``capture`` and ``changefeed``; 4 the group
commit is ``storage.group_commit``).  A read: ``select``.  Schema changes: ``ddl``.  The database's lifecycle:
``database``.  Nothing here imports ``logtide.session``, which delegates to these modules.
"""
