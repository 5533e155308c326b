"""JSON and JSON-lines I/O: the bytes each format writes, and the one-line errors it raises."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from eval_assets.errors import first_problem, validation_message
from eval_assets.jsonio import (
    dumps_json,
    dumps_jsonl,
    iter_jsonl,
    read_json,
    read_jsonl,
    read_model,
    write_json,
    write_jsonl,
)


class Row(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    n: int = 0


class Span(BaseModel):
    start: int
    end: int

    @model_validator(mode="after")
    def _ordered(self) -> Span:
        if self.end < self.start:
            raise ValueError("end must not be before start")
        return self


DOC = {"b": 1, "a": ["é", None]}


def test_default_document_is_as_dimos_writes_it() -> None:
    assert dumps_json(DOC) == json.dumps(DOC, indent=2) + "\n"


def test_formatting_options_give_each_callers_bytes(tmp_path: Path) -> None:
    path = write_json(tmp_path / "sub" / "doc.json", DOC, indent=1, sort_keys=True,
                      newline=False)
    assert path.read_text(encoding="utf-8") == json.dumps(DOC, indent=1, sort_keys=True)
    assert dumps_json(DOC, indent=None, newline=False) == json.dumps(DOC)
    assert dumps_json(DOC, ensure_ascii=False).count("é") == 1
    assert read_json(path) == DOC


def test_nan_is_refused_when_asked() -> None:
    assert dumps_json([float("nan")], indent=None, newline=False) == "[NaN]"
    with pytest.raises(ValueError, match="not JSON compliant"):
        dumps_json([float("nan")], allow_nan=False)


def test_jsonl_round_trip(tmp_path: Path) -> None:
    rows = [{"id": "x", "n": 2}, {"n": 1, "id": "y"}]
    assert dumps_jsonl(rows) == "".join(json.dumps(r) + "\n" for r in rows)
    assert dumps_jsonl(rows, sort_keys=True).splitlines()[1] == '{"id": "y", "n": 1}'
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    path.write_text(path.read_text() + "\n", encoding="utf-8")  # a blank line is skipped
    assert read_jsonl(path, Row) == [Row(id="x", n=2), Row(id="y", n=1)]
    assert list(iter_jsonl(path, Row)) == read_jsonl(path, Row)


def test_bad_line_names_file_line_field_and_fix(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"id": "x"}\n{"id": "y", "n": "many"}\n', encoding="utf-8")
    with pytest.raises(ValueError) as caught:
        read_jsonl(path, Row)
    message = str(caught.value)
    assert message.startswith(f"{path}:2 is not a valid Row record: field 'n': ")
    assert message.endswith("; fix: regenerate the file")
    assert "\n" not in message


def test_unparsable_line_and_document(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"id": "x"\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"rows\.jsonl:1 is not a valid Row record: Invalid JSON"
                                         r".*; fix: fix it by hand"):
        read_jsonl(path, Row, fix="fix it by hand")
    doc = tmp_path / "doc.json"
    doc.write_text("{", encoding="utf-8")
    with pytest.raises(ValueError, match=r"doc\.json is not valid JSON \(.* line 1, column 2\)"):
        read_json(doc)


def test_read_model_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "row.json"
    path.write_text('{"id": "x", "n": 3}', encoding="utf-8")
    assert read_model(path, Row) == Row(id="x", n=3)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_jsonl(tmp_path / "absent.jsonl", Row)


def _error(model: type[BaseModel], data: dict) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(data)
    return caught.value


def test_validation_message_shapes() -> None:
    wrong = _error(Row, {"id": "x", "n": "many"})
    assert first_problem(wrong).field == "n"
    assert validation_message(wrong, "f.yaml") == (
        f"f.yaml: field 'n': {first_problem(wrong).message}; fix: correct or remove 'n'")
    extra = _error(Row, {"id": "x", "colour": 1})
    assert validation_message(extra, "f.yaml", fields=Row.model_fields) == (
        "f.yaml: unknown field 'colour'; fix: use only id, n")
    across = _error(Span, {"start": 2, "end": 1})
    assert validation_message(across, "f.yaml") == "f.yaml: end must not be before start"
    assert validation_message(across, "f.yaml", fix="swap them") == (
        "f.yaml: end must not be before start; fix: swap them")
