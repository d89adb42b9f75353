"""The part of JSON Schema the registry's tools are written in, checked without I/O: `type` (object, string,
integer, number, boolean, array), `properties`, `required`, `enum`, `items`, `maxLength`, `maximum`, `minimum`,
and no property the schema does not name. `problem(schema, value)` says what is wrong (None: nothing)."""

from __future__ import annotations

from typing import Any

_TYPES: dict[str, tuple[type, ...]] = {"object": (dict,), "string": (str,), "integer": (int,), "number": (int, float),
                                       "boolean": (bool,), "array": (list,)}


def problem(schema: dict[str, Any], value: Any, where: str = "arguments") -> str | None:
    kind = schema.get("type")
    if kind is not None:
        ok = isinstance(value, _TYPES[kind]) and not (kind in ("integer", "number") and isinstance(value, bool))
        if not ok:
            return f"{where} must be {'an' if kind[0] in 'aeiou' else 'a'} {kind}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{where} must be one of {', '.join(map(str, schema['enum']))}"
    if isinstance(value, str) and len(value) > schema.get("maxLength", len(value)):
        return f"{where} is longer than {schema['maxLength']} characters"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value > schema.get("maximum", value) or value < schema.get("minimum", value):
            return f"{where} must be from {schema.get('minimum', '-∞')} to {schema.get('maximum', '∞')}"
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            p = problem(schema["items"], item, f"{where}[{i}]")
            if p:
                return p
    if isinstance(value, dict) and kind == "object":
        props = schema.get("properties", {})
        missing = [k for k in schema.get("required", ()) if k not in value]
        if missing:
            return f"{where} lacks {', '.join(missing)}"
        unknown = sorted(k for k in value if k not in props)
        if unknown:
            return f"{where} has no {', '.join(unknown)} (known: {', '.join(sorted(props)) or 'none'})"
        for k, v in value.items():
            p = problem(props[k], v, k if where == "arguments" else f"{where}.{k}")
            if p:
                return p
    return None
