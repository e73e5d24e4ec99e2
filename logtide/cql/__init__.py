"""CQL front end: tokenizer, script splitter and parser producing ``logtide.cql.ast``."""

from logtide.cql.parser import parse, parse_many
from logtide.cql.tokens import ScriptStatement, split_statements, tokenize

__all__ = ["parse", "parse_many", "split_statements", "ScriptStatement", "tokenize"]
