"""Human corrections of gold answers: recorded once, applied by content, never blindly.

Gold answers come from sensors and a few are wrong. A correction is a
:class:`~eval_assets.schemas.overrides.LabelOverride` appended to the recording's overrides file
(``data/labels/<recording>.overrides.jsonl``, :func:`eval_assets.layout.overrides_file_for`). It
carries the content hash of the case it corrects (:func:`case_content_sha256`: the image's bytes,
the question and the choices), so it applies to that content only: when the recording is
replaced and a case of that id is gone or shows something else, the override is *orphaned*,
reported and not applied. The file is meant to be written by ``eval-assets labels override``,
which checks the answer; a hand-edited line whose answer is not one of its case's choices is
*invalid*: reported (file, case, answer, choices, fix) and not applied, because a gold answer no
model can choose would fail every scorer that reads it. Of several overrides of one case, the
last valid one that matches applies.

The scorer reads labels through :func:`apply_overrides`; the public cases and the models'
answers are never touched, so a correction costs no model call.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from eval_assets.atomic import write_text_atomic
from eval_assets.errors import InputError
from eval_assets.hashing import canonical_json_sha256, file_sha256
from eval_assets.jsonio import read_jsonl
from eval_assets.schemas.overrides import LabelOverride
from eval_assets.schemas.vqa import DATASET_CASES, Case, Label, dumps_line

State = Literal["applied", "matches_gold", "superseded", "case_missing", "content_changed",
                "not_a_choice"]
ORPHANED: frozenset[State] = frozenset({"case_missing", "content_changed"})
INVALID: frozenset[State] = frozenset({"not_a_choice"})
"""States of an override that is wrong in itself (a hand-edited line): reported, not applied."""
NOT_APPLIED: frozenset[State] = ORPHANED | INVALID
"""States a reviewer must act on: the override was meant to apply and does not."""
STATE_TEXT: dict[State, str] = {
    "applied": "applied",
    "matches_gold": "not needed: the gold answer already says so",
    "superseded": "superseded by a later override of the case",
    "case_missing": "orphaned: the case is gone",
    "content_changed": "orphaned: the case's image, question or choices changed",
    "not_a_choice": "invalid: the answer is not one of the case's choices",
}
_OTHER_STATES: tuple[tuple[State, str], ...] = (
    ("not_a_choice", "invalid (answer not a choice)"), ("matches_gold", "matches gold"),
    ("superseded", "superseded"))
"""The states a summary names only when some override is in them, and how it names them."""
_FIX = "correct or delete that line (the file is append-only: only a bad line may be removed)"
_FIX_INVALID = ("delete that line and record the correction with `eval-assets labels override "
                "--answer <one of the choices>`, which checks it")
_FIX_ORPHAN = "record it again with `eval-assets labels override` if it still holds"


def case_content_sha256(dataset_dir: Path, case: Case) -> str:
    """Identity of what a case shows: SHA-256 of the canonical JSON of its image's SHA-256 (the
    file's bytes), its question and its choices. Not its id: an id names, content identifies."""
    image = file_sha256(Path(dataset_dir) / case.image)
    return canonical_json_sha256({"image_sha256": image, "question": case.question,
                                  "choices": list(case.choices)})


def read_overrides(path: Path) -> list[LabelOverride]:
    """Every override in ``path``, in the order made; none when the file does not exist.

    A bad line is an :class:`InputError` naming the file, the line and the field.
    """
    path = Path(path)
    if not path.is_file():
        return []
    try:
        return read_jsonl(path, LabelOverride, fix=_FIX)
    except ValueError as exc:
        raise InputError(str(exc)) from exc


@dataclass(frozen=True)
class OverrideState:
    """One override and what became of it against the current dataset."""

    override: LabelOverride
    state: State
    gold: str | None
    """The sensor's gold answer of the case now (None when the case is gone)."""
    choices: tuple[str, ...] = ()
    """The case's choices now (empty when the case is gone)."""

    @property
    def orphaned(self) -> bool:
        """The case is gone or changed: the override is reported, not applied."""
        return self.state in ORPHANED

    @property
    def needs_action(self) -> bool:
        """Orphaned or invalid: meant to apply, it does not, and a human must fix the file."""
        return self.state in NOT_APPLIED

    def problem(self, source: Path) -> str | None:
        """Why this override is not applied and how to fix it, naming ``source`` (the overrides
        file), the case and the answer; None when nothing needs fixing."""
        item = self.override
        where = f"{source}: the override of case {item.case_id!r} ({item.at}, by {item.by})"
        if self.state == "not_a_choice":
            return (f"{where} sets the answer {item.new_answer!r}, which is not one of the "
                    f"case's choices {list(self.choices)}; not applied. Fix: {_FIX_INVALID}")
        if self.orphaned:
            return f"{where} is {STATE_TEXT[self.state]}; not applied. Fix: {_FIX_ORPHAN}"
        return None


@dataclass(frozen=True)
class OverrideResolution:
    """Every override of one recording, resolved against its current dataset."""

    source: Path
    states: tuple[OverrideState, ...]

    @property
    def answers(self) -> dict[str, str]:
        """The corrected answer of each case an override applies to."""
        return {s.override.case_id: s.override.new_answer
                for s in self.states if s.state == "applied"}

    def count(self, *states: State) -> int:
        """How many overrides are in one of ``states``."""
        return sum(1 for s in self.states if s.state in states)

    def summary(self) -> str:
        """``N applied, M orphaned`` (and the other states when there are any)."""
        parts = [f"{self.count('applied')} applied", f"{self.count(*ORPHANED)} orphaned"]
        parts += [f"{self.count(st)} {label}" for st, label in _OTHER_STATES if self.count(st)]
        return ", ".join(parts)

    def problems(self) -> list[str]:
        """One message per override that is not applied and needs a human (orphaned or invalid):
        file, case, answer and fix (:meth:`OverrideState.problem`)."""
        return [text for s in self.states if (text := s.problem(self.source)) is not None]


def resolve_overrides(dataset_dir: Path, cases: Sequence[Case], labels: Sequence[Label],
                      overrides: Sequence[LabelOverride], source: Path) -> OverrideResolution:
    """What each override does to this dataset (see the module docstring for the rules).

    ``labels`` are the sensor's labels (before any override); ``source`` is the overrides file,
    for reports.
    """
    by_id = {c.id: c for c in cases}
    gold = {lab.id: lab.answer for lab in labels}
    hashes: dict[str, str] = {}
    last_match: dict[str, int] = {}
    for i, item in enumerate(overrides):
        case = by_id.get(item.case_id)
        if case is not None:
            if item.case_id not in hashes:
                hashes[item.case_id] = case_content_sha256(dataset_dir, case)
            # An invalid line supersedes nothing: it is never applied, so the last valid
            # correction of the case stays in force (and the invalid one is reported).
            if (hashes[item.case_id] == item.content_sha256
                    and item.new_answer in case.choices):
                last_match[item.case_id] = i
    states = []
    for i, item in enumerate(overrides):
        state: State
        case = by_id.get(item.case_id)
        if case is None:
            state = "case_missing"
        elif hashes[item.case_id] != item.content_sha256:
            state = "content_changed"
        elif item.new_answer not in case.choices:
            # Exact spelling: the scorers compare answers to choices exactly, and the command
            # that records overrides writes the choice's own spelling.
            state = "not_a_choice"
        elif last_match[item.case_id] != i:
            state = "superseded"
        elif gold.get(item.case_id) == item.new_answer:
            state = "matches_gold"
        else:
            state = "applied"
        states.append(OverrideState(item, state, gold.get(item.case_id),
                                    tuple(case.choices) if case is not None else ()))
    return OverrideResolution(source=Path(source), states=tuple(states))


def apply_overrides(labels: Sequence[Label], resolution: OverrideResolution) -> list[Label]:
    """``labels`` with each applied override's answer in place of the sensor's, same order."""
    answers = resolution.answers
    return [lab.model_copy(update={"answer": answers[lab.id]}) if lab.id in answers else lab
            for lab in labels]


def utc_now() -> str:
    """The current time as the overrides file writes it (UTC, seconds, ``Z``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _chosen(case: Case, answer: str, source: Path) -> str:
    """``answer`` spelled as one of the case's choices (compared ignoring case and spaces)."""
    wanted = answer.strip().casefold()
    for choice in case.choices:
        if choice.casefold() == wanted:
            return choice
    raise InputError(f"{source}: --answer {answer!r} is not one of the choices of case "
                     f"{case.id!r}: {list(case.choices)}. Fix: pass one of them")


def _case(by_id: Mapping[str, Case], case_id: str, source: Path) -> Case:
    if case_id in by_id:
        return by_id[case_id]
    near = difflib.get_close_matches(case_id, list(by_id), n=3)
    hint = f" Close ids: {near}." if near else ""
    raise InputError(f"{source}: --case {case_id!r} is not a case of this dataset "
                     f"({len(by_id)} cases).{hint} Fix: pass an id from its {DATASET_CASES} "
                     "(or from `eval-assets labels list`)")


def record_override(dataset_dir: Path, overrides_path: Path, labels: Sequence[Label], *,
                    case_id: str, answer: str, by: str, reason: str,
                    at: str | None = None) -> LabelOverride:
    """Validate a correction against the published dataset and append it to the overrides file.

    ``labels`` are the dataset's sensor labels. The case must exist and ``answer`` must be one
    of its choices and differ from the answer in force (the sensor's, or an earlier override's);
    otherwise an :class:`InputError` names the flag and the fix. The file is rewritten whole,
    atomically, with the new line after the old ones: a reader never sees half a line.
    """
    dataset_dir, overrides_path = Path(dataset_dir), Path(overrides_path)
    cases_file = dataset_dir / DATASET_CASES
    if not cases_file.is_file():
        raise InputError(f"{cases_file} does not exist: the recording has no published dataset "
                         "under this storage root. Fix: run `eval-assets run <recording>` first, "
                         "or pass --storage-root")
    cases = read_jsonl(cases_file, Case)
    case = _case({c.id: c for c in cases}, case_id, cases_file)
    new_answer = _chosen(case, answer, cases_file)
    for name, value in (("--by", by), ("--reason", reason)):
        if not value.strip():
            raise InputError(f"{name} is empty. Fix: say who made the correction and why")
    existing = read_overrides(overrides_path)
    resolution = resolve_overrides(dataset_dir, cases, labels, existing, overrides_path)
    in_force = {lab.id: lab.answer for lab in apply_overrides(labels, resolution)}.get(case.id)
    if in_force is None:
        raise InputError(f"case {case.id!r} has no label in {dataset_dir}; the dataset folder is "
                         "inconsistent. Fix: regenerate it")
    if new_answer == in_force:
        raise InputError(f"case {case.id!r}: {new_answer!r} is already its gold answer; "
                         "nothing to record. Fix: pass the answer the case should have")
    record = LabelOverride(case_id=case.id, content_sha256=case_content_sha256(dataset_dir, case),
                           old_answer=in_force, new_answer=new_answer, by=by.strip(),
                           reason=reason.strip(), at=at or utc_now())
    before = overrides_path.read_text(encoding="utf-8") if overrides_path.is_file() else ""
    if before and not before.endswith("\n"):
        before += "\n"
    write_text_atomic(overrides_path, before + dumps_line(record) + "\n")
    return record
