"""CQL tokenizer and script splitter.

``tokenize`` turns CQL text into a list of ``Token`` with one compiled regular
expression.  ``split_statements`` cuts a script into statement texts at
top-level semicolons without parsing them, so an interactive shell can carry on
after a syntax error in one statement.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from logtide.errors import SyntaxException

# Token kinds
IDENT = "IDENT"  # unquoted identifier or keyword; value is lower-cased
QIDENT = "QIDENT"  # "quoted identifier"; value keeps case, "" unescaped
STRING = "STRING"  # '...' or $$...$$; value is the unescaped content
INTEGER = "INTEGER"
FLOAT = "FLOAT"
UUID = "UUID"
HEX = "HEX"
DURATION = "DURATION"
PUNCT = "PUNCT"  # value is the punctuation itself
EOF = "EOF"

# Cassandra 4 reserved keywords (ReservedKeywords.java): usable as names only when quoted.
RESERVED_KEYWORDS = frozenset(
    """
    select from where and entries full insert update with limit using use set begin unlogged
    batch apply truncate delete in create keyspace schema columnfamily table materialized view
    index on to drop primary into alter rename add order by asc desc allow if is grant of revoke
    modify authorize describe execute norecursive token null not nan infinity or replace default
    unset mbean mbeans
    """.split()
)


class Token:
    """One lexical token: ``kind``, normalised ``value``, and source span ``[start, end)``."""

    __slots__ = ("kind", "value", "start", "end", "text")

    def __init__(self, kind: str, value: str, start: int, end: int, text: str) -> None:
        self.kind = kind
        self.value = value
        self.start = start
        self.end = end
        self.text = text

    def __repr__(self) -> str:
        return f"Token({self.kind}, {self.value!r}, {self.start})"


_DURATION_UNIT = r"(?:y|mo|w|d|h|ms|us|µs|μs|ns|m|s)"
_ISO_DURATION = (
    r"P(?:\d+W"
    r"|(?=\d|T\d)(?:\d+Y)?(?:\d+M)?(?:\d+D)?(?:T(?=\d)(?:\d+H)?(?:\d+M)?(?:\d+S)?)?"
    r"|\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})"
)
_HEX = "[0-9a-fA-F]"
_UUID = rf"{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}"

# Alternatives are ordered by frequency (identifiers and punctuation first) for speed;
# the identifier branch steps aside for UUIDs and ISO durations that start with a letter.
_TOKEN_RE = re.compile(
    r"""
    (?:\s+|(?:--|//)[^\n]*|/\*.*?\*/)*   # whitespace and comments before the token
    (?:
      (?P<ident>(?!""" + _UUID + r"""(?![\w]))(?!""" + _ISO_DURATION + r"""(?![\w]))[a-zA-Z][a-zA-Z0-9_]*)
    | (?P<negduration>-(?:(?i:(?:\d+""" + _DURATION_UNIT + r""")+)|""" + _ISO_DURATION + r""")(?![\w]))
    | (?P<punct>!=|<=|>=|\+=|-=|[(){}\[\],;.*=<>+\-?:])
    | (?P<string>'(?:[^']|'')*')
    | (?P<eof>\Z)
    | (?P<qident>"(?:[^"]|"")+")
    | (?P<bqident>`(?:[^`]|``)+`)        # YQL's quoted identifier (changefeed DDL pasted from YDB)
    | (?P<uuid>""" + _UUID + r"""(?![\w]))
    | (?P<hex>0[xX][0-9a-fA-F]*(?![\w]))
    | (?P<float>\d+(?:\.\d*(?:[eE][+-]?\d+)?|[eE][+-]?\d+)(?![\w.]))
    | (?P<duration>(?:(?i:(?:\d+""" + _DURATION_UNIT + r""")+)|""" + _ISO_DURATION + r""")(?![\w]))
    | (?P<integer>\d+(?![\w]))
    | (?P<dollar>\$\$.*?\$\$)
    )
    """,
    re.VERBOSE | re.DOTALL,
)

_KIND_OF_GROUP = {
    "string": STRING,
    "dollar": STRING,
    "qident": QIDENT,
    "bqident": QIDENT,
    "uuid": UUID,
    "hex": HEX,
    "float": FLOAT,
    "duration": DURATION,
    "negduration": DURATION,
    "integer": INTEGER,
    "ident": IDENT,
    "punct": PUNCT,
}


def position(text: str, pos: int) -> tuple[int, int]:
    """Return the 1-based line and 0-based column of offset ``pos`` in ``text``."""
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1)
    return line, column


def lex_error(text: str, pos: int) -> SyntaxException:
    """Build the SyntaxException for text that cannot be tokenized at ``pos``."""
    ch = text[pos]
    rest = text[pos:]
    if ch == "'" or ch == '"' or rest.startswith("$$") or rest.startswith("/*"):
        expecting = {"'": "'''", '"': "'\"'", "$": "'$'", "/": "'*/'"}[ch]
        line, col = position(text, len(text))
        return SyntaxException(f"line {line}:{col} mismatched character '<EOF>' expecting {expecting}")
    line, col = position(text, pos)
    # Take the whole malformed word (e.g. '12abc' or '0xzz') as the offending token.
    m = re.compile(r"[\w.]+|\S").match(text, pos)
    bad = m.group(0) if m else ch
    return SyntaxException(f"line {line}:{col} token recognition error at: '{bad}'")


def tokenize(text: str) -> list[Token]:
    """Tokenize CQL ``text`` (comments and whitespace dropped); the list ends with an EOF token.

    Raises SyntaxException (with ``line L:C``) for unterminated strings,
    identifiers or comments and for characters that start no token.
    """
    tokens: list[Token] = []
    append = tokens.append
    kinds = _KIND_OF_GROUP
    pos = 0
    for m in _TOKEN_RE.finditer(text):
        if m.start() != pos:
            break
        group = m.lastgroup
        if group is None:  # only whitespace/comments matched, then no token: bad input
            break
        start = m.start(group)
        end = pos = m.end()
        if group == "eof":
            append(Token(EOF, "<EOF>", end, end, "<EOF>"))
            return tokens
        raw = m.group(group)
        if group == "ident":
            value = raw.lower()
        elif group == "string":
            value = raw[1:-1].replace("''", "'")
        elif group == "dollar":
            value = raw[2:-2]
        elif group == "qident":
            value = raw[1:-1].replace('""', '"')
        elif group == "bqident":
            value = raw[1:-1].replace("``", "`")
        else:
            value = raw
        append(Token(kinds[group], value, start, end, raw))
    raise lex_error(text, _skip_blank(text, pos))


_BLANK_RE = re.compile(r"(?:\s+|(?:--|//)[^\n]*|/\*.*?\*/)*", re.DOTALL)


def _skip_blank(text: str, pos: int) -> int:
    return _BLANK_RE.match(text, pos).end()


# --------------------------------------------------------------------------
# Script splitting
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class ScriptStatement:
    """One statement of a script: its text (no trailing ``;``), 1-based line/column, and
    whether it was terminated by ``;`` (``complete``)."""

    text: str
    line: int
    column: int
    complete: bool


# Lenient scanner: unterminated strings/comments run to the end of the script.
_SPLIT_RE = re.compile(
    r"""
      (?P<ws>\s+)
    | (?P<comment>(?:--|//)[^\n]*|/\*(?:.*?\*/|.*\Z))
    | (?P<string>'(?:[^']|'')*(?:'|\Z))
    | (?P<dollar>\$\$(?:.*?\$\$|.*\Z))
    | (?P<qident>"(?:[^"]|"")*(?:"|\Z))
    | (?P<word>[\w$µμ]+)
    | (?P<semi>;)
    | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)


def split_statements(text: str) -> list[ScriptStatement]:
    """Split a CQL script into statements at top-level semicolons, without parsing.

    Semicolons inside strings, quoted identifiers, comments and
    ``BEGIN ... APPLY BATCH`` are not separators.  Comment-only pieces are
    dropped; a trailing piece without ``;`` is returned with ``complete=False``.
    """
    result: list[ScriptStatement] = []
    start = -1  # offset of the current statement's first significant token
    last_end = -1  # end offset of its last significant token
    first_word = ""  # lower-cased first token of the statement
    prev_words: list[str] = []  # the last two significant tokens (lower-cased words or '')
    pos = 0
    n = len(text)
    match = _SPLIT_RE.match
    line_cursor = [0, 1]  # offset and line number up to which newlines were counted
    while pos < n:
        m = match(text, pos)
        group = m.lastgroup
        end = m.end()
        if group == "ws" or group == "comment":
            pos = end
            continue
        if group == "semi":
            in_batch = first_word == "begin" and prev_words[-2:] != ["apply", "batch"]
            if start >= 0 and not in_batch:
                result.append(_statement(text, start, last_end, True, line_cursor))
                start, first_word, prev_words = -1, "", []
            elif start >= 0:
                prev_words = [";"]
                last_end = end
            pos = end
            continue
        word = m.group(0).lower() if group == "word" else ""
        if start < 0:
            start = pos
            first_word = word
        last_end = end
        prev_words = prev_words[-1:] + [word]
        pos = end
    if start >= 0:
        result.append(_statement(text, start, last_end, False, line_cursor))
    return result


def _statement(text: str, start: int, end: int, complete: bool, cursor: list[int]) -> ScriptStatement:
    # Count newlines incrementally so that splitting a long script stays linear.
    cursor[1] += text.count("\n", cursor[0], start)
    cursor[0] = start
    column = start - (text.rfind("\n", 0, start) + 1)
    return ScriptStatement(text[start:end], cursor[1], column + 1, complete)
