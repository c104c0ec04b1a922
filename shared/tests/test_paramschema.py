import pytest

from shared.config import ConfigError
from shared.paramschema import draft_schemas, infer_schema, validate_params


def _config(**quick):
    base = {"K": 100, "eta": 0.5, "name": "a", "instances": {"p1": {"n": 10}}}
    return {"smoke": {"experiments": {"e": {"params": {**base, "K": 10}}}},
            "quick": {"experiments": {"e": {"params": {**base, **quick}}}},
            "full": {"experiments": {"e": {"params": {**base, "instances": {"p1": {"n": 10}, "p4": {"n": 50}}}}}}}


def test_a_config_validates_against_its_own_draft():
    config = _config()
    validate_params(config, draft_schemas(config), "c.yaml")


@pytest.mark.parametrize("change,message", [
    ({"KK": 5}, "key 'quick.experiments.e.params': Additional properties are not allowed ('KK' was unexpected)"),
    ({"K": "ten"}, "key 'quick.experiments.e.params.K': 'ten' is not of type 'integer' (allowed: integer > 0)"),
    ({"K": -3}, "key 'quick.experiments.e.params.K'"),
    ({"eta": True}, "key 'quick.experiments.e.params.eta'"),
    ({"instances": {"p2": {"n": 10, "m": 1}}}, "key 'quick.experiments.e.params.instances.p2'"),
])
def test_bad_values_name_the_file_the_key_and_what_is_allowed(change, message):
    schemas = draft_schemas(_config())
    with pytest.raises(ConfigError, match="^c.yaml: ") as info:
        validate_params(_config(**change), schemas, "c.yaml")
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_missing_key_and_a_missing_schema_are_named():
    config = _config()
    schemas = draft_schemas(config)
    del config["quick"]["experiments"]["e"]["params"]["eta"]
    with pytest.raises(ConfigError, match="'eta' is a required property"):
        validate_params(config, schemas, "c.yaml")
    with pytest.raises(ConfigError, match="no parameter schema"):
        validate_params(_config(), {}, "c.yaml")


def test_inference_rules():
    assert infer_schema([1, 2]) == {"type": "integer", "exclusiveMinimum": 0}
    assert infer_schema([0, 2.5]) == {"type": "number", "minimum": 0}
    assert infer_schema([-1.0])["type"] == "number" and "minimum" not in infer_schema([-1.0])
    assert infer_schema([{"a": 1}, {"a": 2}], record=True)["additionalProperties"] is False
