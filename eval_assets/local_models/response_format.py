"""The structured output the local models honour: a flat ``json_schema`` response format.

OpenAI structured outputs (vLLM guided decoding) for flat object schemas, which is what lets
SmolLM2 serve as the offline LLM judge: see :func:`parse_response_format` for the subset. A
format outside it is refused (:class:`UnsupportedResponseFormat`, HTTP 400), never ignored.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal


class UnsupportedResponseFormat(ValueError):
    """A ``response_format`` a local model cannot honour; the message names the part and the fix.

    The server answers it with HTTP 400: a reply that silently ignored the format would be free
    text the client then fails to parse.
    """


# Keywords that only describe a schema; they never constrain the reply, so they are accepted.
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment"})
_OBJECT_KEYWORDS = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties",
                                   "$schema", "$id"}
_KIND_KEYWORDS: dict[str, frozenset[str]] = {
    "integer": _ANNOTATIONS | {"type", "minimum", "maximum", "exclusiveMinimum",
                               "exclusiveMaximum"},
    "number": _ANNOTATIONS | {"type", "minimum", "maximum"},
    "string": _ANNOTATIONS | {"type"},
    "boolean": _ANNOTATIONS | {"type"},
    "enum": _ANNOTATIONS | {"type", "enum"},
}
_ENUM_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "null": (type(None),),
}
MAX_INTEGER_VALUES = 20
MAX_STRING_TOKENS = 48
MAX_NUMBER_CHARACTERS = 12
"""The longest JSON number a local model writes for a ``number`` field (sign, digits, point)."""
_FIX = ("fix: send a flat object schema whose properties are integers with minimum and maximum "
        f"(at most {MAX_INTEGER_VALUES} values), numbers, enums, booleans or plain strings")


@dataclass(frozen=True)
class SchemaField:
    """One property of a supported schema: its name, kind and, unless a string or a number, its
    values.

    ``literals`` are the JSON texts of the allowed values in schema order (``"1"``, ``"true"``,
    ``"\\"yes\\""``); a string or number field has none. ``bounds``: a number's inclusive
    ``minimum`` and ``maximum`` (either None when the schema gives none).
    """

    name: str
    kind: Literal["integer", "number", "enum", "boolean", "string"]
    literals: tuple[str, ...] = ()
    bounds: tuple[float | None, float | None] = (None, None)


@dataclass(frozen=True)
class JsonSchemaFormat:
    """A ``json_schema`` response format reduced to what the local models build: flat fields."""

    name: str
    fields: tuple[SchemaField, ...]

    def string_tokens(self, max_tokens: int) -> int:
        """Tokens (words, for the random model) each string field may use.

        ``min(max_tokens // number of string fields, 48)``, so the whole reply stays within the
        request's ``max_tokens`` apart from the JSON punctuation and the ranked values.
        """
        strings = sum(1 for f in self.fields if f.kind == "string")
        return min(max_tokens // strings, MAX_STRING_TOKENS) if strings else 0


def _bound(value: Any, where: str, keyword: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise UnsupportedResponseFormat(f"{where}: '{keyword}' must be a finite number, got "
                                        f"{value!r}; {_FIX}")
    return float(value)


def _integer_literals(prop: Mapping[str, Any], where: str) -> tuple[str, ...]:
    low: float | None = None
    high: float | None = None
    if "minimum" in prop:
        low = math.ceil(_bound(prop["minimum"], where, "minimum"))
    if "exclusiveMinimum" in prop:
        low = max(low if low is not None else -math.inf,
                  math.floor(_bound(prop["exclusiveMinimum"], where, "exclusiveMinimum")) + 1)
    if "maximum" in prop:
        high = math.floor(_bound(prop["maximum"], where, "maximum"))
    if "exclusiveMaximum" in prop:
        high = min(high if high is not None else math.inf,
                   math.ceil(_bound(prop["exclusiveMaximum"], where, "exclusiveMaximum")) - 1)
    if low is None or high is None:
        raise UnsupportedResponseFormat(f"{where}: an integer needs both a minimum and a maximum "
                                        f"so its values can be ranked; {_FIX}")
    count = int(high) - int(low) + 1
    if not 1 <= count <= MAX_INTEGER_VALUES:
        raise UnsupportedResponseFormat(
            f"{where}: the range {int(low)}..{int(high)} holds {max(count, 0)} integers; this "
            f"server ranks 1 to {MAX_INTEGER_VALUES}; {_FIX}")
    return tuple(str(v) for v in range(int(low), int(high) + 1))


def _enum_literals(prop: Mapping[str, Any], where: str) -> tuple[str, ...]:
    values = prop["enum"]
    if not isinstance(values, list) or not values:
        raise UnsupportedResponseFormat(f"{where}: 'enum' must be a non-empty list; {_FIX}")
    declared = prop.get("type")
    allowed = _ENUM_TYPES.get(declared) if isinstance(declared, str) else None
    if declared is not None and allowed is None:
        raise UnsupportedResponseFormat(f"{where}: enum type {declared!r} is not supported; "
                                        f"{_FIX}")
    literals: list[str] = []
    for value in values:
        if isinstance(value, dict | list):
            raise UnsupportedResponseFormat(f"{where}: enum value {value!r} is not a scalar; "
                                            f"{_FIX}")
        # bool is an int in Python; JSON keeps them apart.
        if allowed is not None and (not isinstance(value, allowed)
                                    or (isinstance(value, bool) and bool not in allowed)):
            raise UnsupportedResponseFormat(f"{where}: enum value {value!r} is not of type "
                                            f"{declared!r}; fix the schema")
        literal = json.dumps(value, ensure_ascii=False)
        if literal not in literals:
            literals.append(literal)
    return tuple(literals)


def _schema_field(name: str, prop: Any, where: str) -> SchemaField:
    if not isinstance(prop, Mapping):
        raise UnsupportedResponseFormat(f"{where}: expected a schema object, got "
                                        f"{type(prop).__name__}; {_FIX}")
    kind: Any = "enum" if "enum" in prop else prop.get("type")
    if "enum" not in prop and kind not in ("integer", "number", "string", "boolean"):
        raise UnsupportedResponseFormat(f"{where}: type {kind!r} is not supported (supported: "
                                        f"integer, number, string, boolean, enum); {_FIX}")
    unknown = sorted(set(prop) - _KIND_KEYWORDS[kind])
    if unknown:
        raise UnsupportedResponseFormat(
            f"{where}: keyword {unknown[0]!r} is not supported for a {kind} (supported: "
            f"{', '.join(sorted(_KIND_KEYWORDS[kind] - _ANNOTATIONS))}); {_FIX}")
    if kind == "integer":
        return SchemaField(name, "integer", _integer_literals(prop, where))
    if kind == "number":
        low = _bound(prop["minimum"], where, "minimum") if "minimum" in prop else None
        high = _bound(prop["maximum"], where, "maximum") if "maximum" in prop else None
        if low is not None and high is not None and low > high:
            raise UnsupportedResponseFormat(f"{where}: minimum {low:g} is above maximum "
                                            f"{high:g}; fix the schema")
        return SchemaField(name, "number", bounds=(low, high))
    if kind == "enum":
        return SchemaField(name, "enum", _enum_literals(prop, where))
    if kind == "boolean":
        return SchemaField(name, "boolean", ("true", "false"))
    return SchemaField(name, "string")


def parse_response_format(response_format: Any) -> JsonSchemaFormat | None:
    """The fields to build for an OpenAI ``response_format``; None for free text.

    ``None`` and ``{"type": "text"}`` mean free text. ``{"type": "json_schema", "json_schema":
    {"name": ..., "schema": {...}}}`` is supported when the schema is a flat object whose
    properties are integers with ``minimum`` and ``maximum`` (at most 20 values), numbers
    (optionally with ``minimum`` and ``maximum``), enums of scalars, booleans or strings without
    constraints; every property is written, in schema order. Anything else raises
    :class:`UnsupportedResponseFormat`.
    """
    if response_format is None:
        return None
    where = "response_format"
    if not isinstance(response_format, Mapping):
        raise UnsupportedResponseFormat(f"{where}: expected an object, got "
                                        f"{type(response_format).__name__}; {_FIX}")
    kind = response_format.get("type")
    if kind == "text":
        return None
    if kind != "json_schema":
        raise UnsupportedResponseFormat(
            f"{where}: type {kind!r} is not supported (a reply is built from a schema, so "
            f"'json_object' without one cannot be honoured); fix: send type 'json_schema' with "
            f"a 'json_schema': {{'name': ..., 'schema': {{...}}}}")
    spec = response_format.get("json_schema")
    if not isinstance(spec, Mapping) or not isinstance(spec.get("schema"), Mapping):
        raise UnsupportedResponseFormat(
            f"{where}.json_schema: needs a 'schema' object; fix: send "
            f"{{'name': ..., 'schema': {{'type': 'object', ...}}}}")
    schema = spec["schema"]
    where = f"{where}.json_schema.schema"
    if schema.get("type") != "object":
        raise UnsupportedResponseFormat(f"{where}: the top level must be type 'object', got "
                                        f"{schema.get('type')!r}; {_FIX}")
    unknown = sorted(set(schema) - _OBJECT_KEYWORDS)
    if unknown:
        raise UnsupportedResponseFormat(f"{where}: keyword {unknown[0]!r} is not supported; "
                                        f"{_FIX}")
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        raise UnsupportedResponseFormat(f"{where}: 'properties' must be a non-empty object; "
                                        f"{_FIX}")
    required = schema.get("required", [])
    if not isinstance(required, list) or not set(required) <= set(properties):
        missing = sorted(set(required) - set(properties)) if isinstance(required, list) else []
        raise UnsupportedResponseFormat(
            f"{where}: 'required' must list names of 'properties' (unknown: {missing}); fix the "
            f"schema")
    fields = tuple(_schema_field(str(name), prop, f"{where}.properties.{name}")
                   for name, prop in properties.items())
    return JsonSchemaFormat(name=str(spec.get("name", "")), fields=fields)
