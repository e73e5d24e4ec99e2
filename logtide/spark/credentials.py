"""Logins of the ``logtide pipeline`` jobs without a password on the command line (docs/spark.md "Logins").

A ``cql://`` or ``kafka://`` URL may carry ``USER:PASSWORD@``, which every user of the machine sees in ``ps``
and which stays in the shell's history.  As cqlsh takes its login from the command line, else from its
credentials file (``~/.cassandra/credentials``, section ``[PlainTextAuthProvider]``, refused when other users
may read it), else asks for the password on the terminal, a job's login is, for the user name and for the
password apart:

1. the URL (a password there draws a warning on standard error, as cqlsh's ``-p`` does);
2. the environment: ``LOGTIDE_CQL_USERNAME`` / ``LOGTIDE_CQL_PASSWORD`` for ``cql://``,
   ``LOGTIDE_KAFKA_USERNAME`` / ``LOGTIDE_KAFKA_PASSWORD`` for ``kafka://``;
3. the credentials file: ``--credentials FILE``, else ``$LOGTIDE_CREDENTIALS``, else cqlsh's
   ``~/.cassandra/credentials`` when it exists;
4. with a user name and still no password: a prompt on the terminal (``getpass``); without a terminal the job
   stops, saying where a password can come from.
"""

from __future__ import annotations

import configparser
import os
import stat
import sys
from dataclasses import dataclass
from typing import Callable, Mapping

from .options import OptionError

DEFAULT_FILE = os.path.join("~", ".cassandra", "credentials")  # cqlsh's default
FILE_VARIABLE = "LOGTIDE_CREDENTIALS"
SECTIONS = ("PlainTextAuthProvider", "plain_text_auth")  # cqlsh's section, then its older name
VARIABLES = {"cql": ("LOGTIDE_CQL_USERNAME", "LOGTIDE_CQL_PASSWORD"),
             "kafka": ("LOGTIDE_KAFKA_USERNAME", "LOGTIDE_KAFKA_PASSWORD")}

Ask = Callable[[str], str]


@dataclass(frozen=True)
class Login:
    """A user name and password (either may be None), and where each came from (for messages)."""

    username: str | None = None
    password: str | None = None
    username_from: str = ""
    password_from: str = ""


def file_is_private(st: os.stat_result, uid: int) -> bool:
    """cqlsh's rule for its credentials file: owned by the user running the command (root may use anyone's), and
    neither group nor others may read it."""
    return (uid == 0 or st.st_uid == uid) and stat.S_IMODE(st.st_mode) & (stat.S_IRGRP | stat.S_IROTH) == 0


def credentials_file(given: str | None, environ: Mapping[str, str]) -> tuple[str, bool] | None:
    """The credentials file to read and whether it was named (``--credentials``, ``$LOGTIDE_CREDENTIALS``), or
    cqlsh's default; None when none is named and the default does not exist."""
    if given:
        return os.path.expanduser(given), True
    if environ.get(FILE_VARIABLE):
        return os.path.expanduser(environ[FILE_VARIABLE]), True
    home = environ.get("HOME") or os.path.expanduser("~")
    default = os.path.join(home, ".cassandra", "credentials")
    return (default, False) if os.path.exists(default) else None


def read_credentials(path: str) -> Login:
    """The user name and password of a cqlsh credentials file (INI, ``[PlainTextAuthProvider]`` with ``username``
    and ``password``, values taken verbatim).  A file that group or others may read, or that another user owns,
    is refused as cqlsh refuses to use it."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise OptionError(f"cannot read credentials file {path}: {e.strerror}") from None
    if not file_is_private(st, os.getuid()):
        mode = stat.S_IMODE(st.st_mode)
        readers = " and ".join(who for who, bit in (("group", stat.S_IRGRP), ("others", stat.S_IROTH)) if mode & bit)
        why = ("is owned by another user" if st.st_uid != os.getuid() else
               f"may be read by {readers} (mode {mode:04o})")
        raise OptionError(f"credentials file {path} {why}: it must be yours and private, as cqlsh requires "
                          f"(chmod 600 {path})")
    parser = configparser.RawConfigParser()  # no interpolation: a password is taken as written
    try:
        with open(path, encoding="utf-8") as f:
            parser.read_file(f)
    except OSError as e:
        raise OptionError(f"cannot read credentials file {path}: {e.strerror}") from None
    except (configparser.Error, UnicodeDecodeError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise OptionError(f"credentials file {path} is not an INI file with a [PlainTextAuthProvider] section: "
                          f"{first}") from None
    found: dict[str, str] = {}
    for section in reversed(SECTIONS):  # the current section wins over the older name
        if parser.has_section(section):
            found.update({k: v for k, v in parser.items(section) if k in ("username", "password")})
    where = f"credentials file {path}"
    return Login(found.get("username"), found.get("password"), where if "username" in found else "",
                 where if "password" in found else "")


def resolve_login(url: Login, kind: str, what: str, environ: Mapping[str, str], file: str | None = None,
                  ask: Ask | None = None) -> Login:
    """The login of one URL (``kind`` ``cql`` or ``kafka``, ``what`` names it in messages, e.g. ``--source``):
    each of user name and password from the URL, else the environment, else the credentials file; then, with a
    user name and no password, ``ask`` (a terminal prompt, None when there is no terminal)."""
    user_var, password_var = VARIABLES[kind]
    username, username_from = url.username, url.username_from
    password, password_from = url.password, url.password_from
    if username is None and environ.get(user_var):
        username, username_from = environ[user_var], user_var
    if password is None and environ.get(password_var):
        password, password_from = environ[password_var], password_var
    if username is None or password is None:
        chosen = credentials_file(file, environ)
        if chosen is not None:
            path, named = chosen
            from_file = read_credentials(path) if named or os.path.exists(path) else Login()
            if username is None and from_file.username is not None:
                username, username_from = from_file.username, from_file.username_from
            if password is None and from_file.password is not None:
                password, password_from = from_file.password, from_file.password_from
    if username is None:
        if password_from in (password_var, "the URL"):
            raise OptionError(f"{what}: a password is given ({password_from}) but no user name: put it in the URL "
                              f"(USER@HOST), {user_var} or the credentials file")
        return Login()  # no login, as cqlsh without a user name
    if password is None:
        if ask is None:
            raise OptionError(f"{what}: no password for user {username}: set {password_var}, put it in a credentials "
                              f"file ({DEFAULT_FILE} or --credentials FILE, section [PlainTextAuthProvider], "
                              f"mode 600), or run the command on a terminal to be asked for it")
        password, password_from = ask(f"Password for {username} ({what}): "), "the prompt"
    return Login(username, password, username_from, password_from)


def terminal_prompt() -> Ask | None:
    """``getpass`` when standard input is a terminal (cqlsh asks the same way), else None."""
    try:
        interactive = sys.stdin is not None and sys.stdin.isatty()
    except ValueError:
        interactive = False
    if not interactive:
        return None
    import getpass

    return getpass.getpass


def url_password_warning(command: str, what: str, kind: str) -> str:
    """The warning for a password written in a URL on the command line (cqlsh warns of ``-p`` likewise)."""
    return (f"{command}: warning: {what} carries a password, which other users see in `ps` and which stays in the "
            f"shell's history: use {VARIABLES[kind][1]}, a credentials file ({DEFAULT_FILE}, mode 600) or the "
            f"prompt instead")
