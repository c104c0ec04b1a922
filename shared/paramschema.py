"""Typed parameters of every experiment: ``papers/<slug>/params.schema.json``, checked before any job runs.

The file maps each experiment to a JSON schema of its ``params`` block. Objects are closed
(``additionalProperties: false``), so a misspelled key is an error; keys present at every scale are required;
numbers carry their type and sign. :func:`validate_params` checks all three scales of a paper's config and
raises :class:`shared.config.ConfigError` with one line: the file, the key path and what is allowed.

The schema of a new or changed experiment is drafted from its config with ``python -m shared.paramschema
papers/<slug>`` (types from the values at every scale; objects whose values are all objects of one kind, such
as named instances, become open maps of that kind); review the draft before committing it, since it encodes
what the config says today.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import jsonschema

from shared.config import SCALES, ConfigError, load_paper_config

__all__ = ["SCHEMA_NAME", "infer_schema", "draft_schemas", "validate_params", "main"]

SCHEMA_NAME = "params.schema.json"


_JSON_TYPES = ((type(None), "null"), (bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"),
               (list, "array"), (dict, "object"))  # bool before int: a bool is an int in Python


def _type_of(value) -> str:
    for python_type, name in _JSON_TYPES:
        if isinstance(value, python_type):
            return name
    raise TypeError(f"unsupported value {value!r}")


def _numbers(values) -> dict:
    schema = {"type": "integer" if all(_type_of(v) == "integer" for v in values) else "number"}
    if all(v > 0 for v in values):
        schema["exclusiveMinimum"] = 0
    elif all(v >= 0 for v in values):
        schema["minimum"] = 0
    return schema


def _objects(values, record: bool = False) -> dict:
    inner = [v for d in values for v in d.values()]
    key_sets = {frozenset(d) for d in values}
    if not record and len(key_sets) > 1 and inner and all(isinstance(v, dict) for v in inner):
        return {"type": "object", "additionalProperties": infer_schema(inner)}  # named records, free names
    keys = sorted({k for d in values for k in d})
    required = [k for k in keys if all(k in d for d in values)]
    schema = {"type": "object", "additionalProperties": False,
              "properties": {k: infer_schema([d[k] for d in values if k in d]) for k in keys}}
    if required:
        schema["required"] = required
    return schema


def infer_schema(values: list, *, record: bool = False) -> dict:
    """A JSON schema that every one of ``values`` satisfies, as narrow as their types and signs allow.

    An object is a closed record of its keys, except where the scales name different keys and every value is
    an object (named instances, say): then any name maps to a record of the merged kind. ``record`` forces a
    closed record (an experiment's top-level params).
    """
    kinds = {_type_of(v) for v in values}
    if kinds <= {"integer", "number"}:
        return _numbers(values)
    if len(kinds) > 1:
        return {"anyOf": [infer_schema([v for v in values if _type_of(v) == k]) for k in sorted(kinds)]}
    kind = kinds.pop()
    if kind == "object":
        return _objects(values, record)
    if kind == "array":
        items = [x for v in values for x in v]
        return {"type": "array", "items": infer_schema(items)} if items else {"type": "array"}
    return {"type": kind}


def draft_schemas(config: dict) -> dict:
    """Experiment -> schema of its params, drafted from the values the config gives at every scale."""
    names = sorted({n for s in SCALES for n in config[s]["experiments"]})
    return {n: infer_schema([config[s]["experiments"][n]["params"] for s in SCALES
                             if n in config[s]["experiments"]], record=True) for n in names}


def _allowed(error: jsonschema.ValidationError) -> str:
    schema = error.schema if isinstance(error.schema, dict) else {}
    if error.validator == "additionalProperties":
        return "allowed keys: " + ", ".join(sorted(schema.get("properties", {}))) if schema.get("properties") \
            else "no keys"
    if error.validator == "required":
        return "required keys: " + ", ".join(schema.get("required", []))
    parts = [schema.get("type", "")]
    if "exclusiveMinimum" in schema:
        parts.append(f"> {schema['exclusiveMinimum']}")
    if "minimum" in schema:
        parts.append(f">= {schema['minimum']}")
    if "maximum" in schema:
        parts.append(f"<= {schema['maximum']}")
    if "enum" in schema:
        parts.append(f"one of {schema['enum']}")
    return "allowed: " + " ".join(str(p) for p in parts if p)


def validate_params(config: dict, schemas: dict, where: str) -> None:
    """Check every experiment's params at every scale; ConfigError (one line) on the first problem."""
    for scale in SCALES:
        for name, entry in config[scale]["experiments"].items():
            key = f"{scale}.experiments.{name}.params"
            if name not in schemas:
                raise ConfigError(f"{where}: key '{key}': experiment {name!r} has no parameter schema in "
                                  f"{SCHEMA_NAME} (draft one with: python -m shared.paramschema <paper folder>)")
            validator = jsonschema.Draft202012Validator(schemas[name])
            params = json.loads(json.dumps(entry["params"]))  # as JSON sees it: YAML's integer keys become strings
            errors = sorted(validator.iter_errors(params), key=lambda e: list(e.absolute_path))
            if errors:
                err = errors[0]
                path = ".".join([key, *map(str, err.absolute_path)])
                raise ConfigError(f"{where}: key '{path}': {err.message} ({_allowed(err)})")


def load_and_validate(paper_dir: str | Path) -> None:
    """Validate ``papers/<slug>/config.yaml`` against the paper's ``params.schema.json``."""
    paper_dir = Path(paper_dir)
    config_path = paper_dir / "config.yaml"
    schema_path = paper_dir / SCHEMA_NAME
    if not schema_path.is_file():
        raise ConfigError(f"{config_path}: the paper has no {SCHEMA_NAME} (draft one with: python -m "
                          f"shared.paramschema {paper_dir})")
    validate_params(load_paper_config(config_path), json.loads(schema_path.read_text(encoding="utf-8")),
                    str(config_path))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Draft papers/<slug>/params.schema.json from its config.")
    parser.add_argument("paper_dir", nargs="+")
    args = parser.parse_args(argv)
    for paper_dir in map(Path, args.paper_dir):
        schemas = draft_schemas(load_paper_config(paper_dir / "config.yaml"))
        (paper_dir / SCHEMA_NAME).write_text(json.dumps(schemas, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {paper_dir / SCHEMA_NAME} ({len(schemas)} experiments)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
