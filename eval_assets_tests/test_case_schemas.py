"""Public case records refuse choices a model could not tell apart, in both public files."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from eval_assets.schemas.spatial import SpatialCase
from eval_assets.schemas.vqa import Case


def test_dimos_case_refuses_choices_equal_ignoring_case() -> None:
    with pytest.raises(ValidationError, match="repeat a choice"):
        Case(id="a", image="assets/x.png", question="q", choices=["Yes", "yes"])
    assert Case(id="a", image="assets/x.png", question="q", choices=["yes", "no"]).choices


def test_spatial_case_refuses_choices_equal_ignoring_case() -> None:
    with pytest.raises(ValidationError, match="repeat a choice"):
        SpatialCase(id="a", images=["assets/x.png"], question="q", answer_type="choice",
                    choices=["front-left", "FRONT-LEFT"])
    with pytest.raises(ValidationError, match="a 'number' case has no choices"):
        SpatialCase(id="a", images=["assets/x.png"], question="q", answer_type="number",
                    choices=["1", "2"])
