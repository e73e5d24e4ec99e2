"""Which user-defined function or aggregate a call names: by its arguments' types, as ScyllaDB's
``functions::get`` finds an overload (docs/compatibility.md "User-defined functions")."""

from __future__ import annotations

from typing import Any, Sequence

from ..cql import ast
from ..errors import InvalidRequest
from ..schema.types_convert import EXACT_MATCH, NOT_ASSIGNABLE, assignment
from ..schema.udf import signature, type_name
from .functions import literal_assignment


def resolve_user(candidates: Sequence[Any], keyspace: str, fc: ast.FunctionCall, arg_types: Sequence[Any],
                 texts: Sequence[str]) -> Any:
    """The overload the arguments fit: exactly when one does, else the only one they fit at all."""
    n = len(fc.args)
    fitting, exact = [], []
    for f in candidates:
        if len(f.arg_types) != n:
            continue
        scores = [assignment(t, p) if t is not None else literal_assignment(term, p)
                  for t, term, p in zip(arg_types, fc.args, f.arg_types)]
        if NOT_ASSIGNABLE in scores:
            continue
        fitting.append(f)
        if all(s == EXACT_MATCH for s in scores):
            exact.append(f)
    if len(exact) == 1 or len(fitting) == 1:
        return exact[0] if len(exact) == 1 else fitting[0]
    if not fitting:
        if len(candidates) == 1:
            f = candidates[0]
            if len(f.arg_types) != n:
                raise InvalidRequest(f"Invalid number of arguments in call to function {keyspace}.{fc.name}: "
                                     f"{len(f.arg_types)} required but {n} provided")
            for i, (t, term, p) in enumerate(zip(arg_types, fc.args, f.arg_types)):
                fits = assignment(t, p) if t is not None else literal_assignment(term, p)
                if fits == NOT_ASSIGNABLE:
                    raise InvalidRequest(f"Type error: {texts[i]} cannot be passed as argument {i} of "
                                         f"function {keyspace}.{fc.name} of type {type_name(p)}")
        known = ", ".join(f"{keyspace}.{signature(f.name, f.arg_types)}" for f in candidates)
        raise InvalidRequest(f"Invalid call to function {keyspace}.{fc.name}, none of its type signatures match "
                             f"(known type signatures: {known})")
    raise InvalidRequest(f"Ambiguous call to function {keyspace}.{fc.name} (can be matched by following "
                         f"signatures: {', '.join(signature(f.name, f.arg_types) for f in fitting)}): use type casts "
                         f"to disambiguate")

