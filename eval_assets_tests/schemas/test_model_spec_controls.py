"""A models-file entry may set the prompt controls; one that does not keeps its data version."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval_assets.defs.assets.sources import model_versions
from eval_assets.defs.resources import VLMClientResource
from eval_assets.schemas.predictions import (
    PROMPT_CONTROL_FIELDS,
    ModelsFileError,
    ModelSpec,
    PromptControls,
    load_model_specs,
)

RANDOM = "  - name: random\n    serve: random\n    seed: 0\n"
# text_sha256(spec.model_dump_json()) of the entry above, computed with main's code before the
# control fields existed (commit fc03acb): the data version every existing `random` cell holds.
RANDOM_VERSION = "c69965eaec3a45dc11c8856ba40076dbdfd57ea1ee8658dfe313516c47971f2a"


def _models(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "models.yaml"
    path.write_text("models:\n" + body)
    return path


def test_the_entry_sets_the_controls_and_the_resource_gives_the_rest(tmp_path: Path) -> None:
    spec, = load_model_specs(_models(
        tmp_path, RANDOM + "    templates: true\n    repeats: 3\n    prompt_control_cases: 5\n"))
    resource = VLMClientResource(repeats=2, repeat_temperature=0.9, structured=True)
    assert spec.prompt_controls(resource.prompt_controls()) == PromptControls(
        templates=True, repeats=3, repeat_temperature=0.9, structured=True,
        prompt_control_cases=5)
    # An explicit false wins over a resource that switches the control on.
    off = ModelSpec.model_validate({"name": "m", "serve": "random", "structured": False})
    assert off.prompt_controls(resource.prompt_controls()).structured is False


def test_an_entry_without_controls_takes_the_resource_values(tmp_path: Path) -> None:
    spec, = load_model_specs(_models(tmp_path, RANDOM))
    resource = VLMClientResource(templates=True, repeats=4, prompt_control_cases=7)
    assert spec.prompt_controls(resource.prompt_controls()) == resource.prompt_controls()
    assert spec.prompt_controls(VLMClientResource().prompt_controls()) == PromptControls(
        templates=False, repeats=1, repeat_temperature=0.7, structured=False,
        prompt_control_cases=100)
    assert set(PROMPT_CONTROL_FIELDS) <= set(VLMClientResource.model_fields)


@pytest.mark.parametrize(("line", "field"), [
    ("repeats: 0", "repeats"), ("repeat_temperature: 0", "repeat_temperature"),
    ("prompt_control_cases: 0", "prompt_control_cases"), ("templates: maybe", "templates"),
    ("template: true", "template")])
def test_an_invalid_control_names_file_entry_field_and_fix(tmp_path: Path, line: str,
                                                           field: str) -> None:
    path = _models(tmp_path, RANDOM + f"    {line}\n")
    with pytest.raises(ModelsFileError) as err:
        load_model_specs(path)
    message = str(err.value)
    assert str(path) in message and "models[0]" in message and f"field {field!r}" in message
    assert "Fix that entry" in message and "templates" in message


def test_an_entry_without_controls_keeps_its_data_version(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Existing cells must not go stale for everyone: the unset controls are not hashed."""
    monkeypatch.setenv("EVAL_ASSETS_MODELS", str(_models(tmp_path, RANDOM)))
    assert model_versions()["random"] == RANDOM_VERSION
    # Setting a control is a new version of that entry (its cells re-run), even if the value
    # matches the resource's: the entry cannot know which resource config a run will use.
    for extra in ("    templates: true\n", "    templates: false\n", "    repeats: 2\n"):
        monkeypatch.setenv("EVAL_ASSETS_MODELS", str(_models(tmp_path, RANDOM + extra)))
        assert model_versions()["random"] != RANDOM_VERSION, extra
