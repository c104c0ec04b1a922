"""Loading and validating YAML configs against the JSON schemas in ``workflow/schemas``."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import jsonschema
import yaml

__all__ = ["REPO_ROOT", "SCALES", "ConfigError", "load_yaml", "validate", "load_paper_config", "scale_block",
           "enabled_papers"]

REPO_ROOT = Path(__file__).resolve().parent.parent
SCHEMA_DIR = REPO_ROOT / "workflow" / "schemas"
SCALES = ("smoke", "quick", "full")


class ConfigError(ValueError):
    """A config or claims file does not match its schema; the message names the file and the key."""


def load_yaml(path: str | Path):
    """Parse a YAML file; ConfigError naming the file when it is missing or not valid YAML."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: file not found")
    try:
        with open(path, encoding="utf-8") as fh:
            return yaml.safe_load(fh)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc


@lru_cache(maxsize=None)
def _schema(name: str) -> dict:
    with open(SCHEMA_DIR / name, encoding="utf-8") as fh:
        return json.load(fh)


def validate(data, schema_name: str, *, where: str):
    """Validate ``data`` against ``workflow/schemas/<schema_name>``; ConfigError naming the key on failure."""
    validator = jsonschema.Draft202012Validator(_schema(schema_name))
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        key = ".".join(str(p) for p in err.absolute_path) or "<top level>"
        raise ConfigError(f"{where}: key '{key}': {err.message}")
    return data


def load_paper_config(path: str | Path) -> dict:
    """Load ``papers/<slug>/config.yaml`` and validate it against ``paper_config.schema.json``."""
    return validate(load_yaml(path), "paper_config.schema.json", where=str(path))


def scale_block(config: dict, scale: str, *, where: str = "config") -> dict:
    """The block of one scale (``smoke``, ``quick`` or ``full``); ConfigError for an unknown scale."""
    if scale not in SCALES:
        raise ConfigError(f"{where}: key 'scale': unknown scale {scale!r}; choose one of {list(SCALES)}")
    return config[scale]


def enabled_papers(workflow_config: dict) -> list[str]:
    """Slugs of the enabled papers, in the order of the workflow config."""
    return [slug for slug, on in workflow_config["papers"].items() if on]
