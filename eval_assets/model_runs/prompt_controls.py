"""The prompt controls' extra calls (:mod:`eval_assets.prompt_controls`): dimOS cases asked in
the other templates, repeated at a temperature above 0, or with a JSON schema of their choices.

Each control asks its own subset (:func:`~eval_assets.prompt_controls.selected`: up to
``per_family`` cases per family of the dataset, drawn by case id). Every request is built from
public fields only: the case's image, question and choices; the paraphrase is the family's
template filled with the object the question itself names. The template of record is the case's
own answer (``answers.jsonl``), so it is never asked twice. Each call is journalled
(``templates.journal.jsonl``, ``repeats.journal.jsonl``, ``structured.journal.jsonl``) and
resumed by the content shown plus the template and repeat index (a repeat's temperature and a
schema are part of the content hash); ``templates.jsonl``, ``repeats.jsonl`` and
``structured.jsonl`` hold the standing records, in case order.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval_assets.atomic import write_text_atomic
from eval_assets.hashing import bytes_sha256, canonical_json, text_sha256
from eval_assets.journal import Journal, exclusive_run_lock
from eval_assets.model_runs.client import VLMClient
from eval_assets.model_runs.prompts import read_png, text_content_sha256, text_messages
from eval_assets.prompt_controls import (
    PromptControl,
    TemplateName,
    Wording,
    answer_schema,
    check_per_family,
    check_repeats,
    selected,
    wording,
)
from eval_assets.schemas.predictions import (
    RUN_LOCK,
    RUN_REPEATS,
    RUN_REPEATS_JOURNAL,
    RUN_STRUCTURED,
    RUN_STRUCTURED_JOURNAL,
    RUN_TEMPLATES,
    RUN_TEMPLATES_JOURNAL,
    PromptVariantRecord,
)
from eval_assets.schemas.vqa import Case

__all__ = ["PROMPT_FILES", "Ask", "PromptControlRun", "plan_prompt_control", "prompt_key",
           "run_prompt_control"]

# control -> (standing records, journal).
PROMPT_FILES: dict[PromptControl, tuple[str, str]] = {
    "templates": (RUN_TEMPLATES, RUN_TEMPLATES_JOURNAL),
    "repeats": (RUN_REPEATS, RUN_REPEATS_JOURNAL),
    "structured": (RUN_STRUCTURED, RUN_STRUCTURED_JOURNAL),
}

Key = tuple[str, str, str, str | None, str, int]


def prompt_key(record: PromptVariantRecord) -> Key:
    """Resume key of a prompt-control call: (case_id, model, config_hash, content_sha256,
    template, repeat index)."""
    return (record.case_id, record.model, record.config_hash, record.content_sha256,
            record.template, record.repeat)


@dataclass(frozen=True)
class Ask:
    """One call a control makes: the case, its wording, the repeat index and temperature (a
    repeat), the response format (structured), and the hash of all the model is shown."""

    case: Case
    wording: Wording
    repeat: int
    temperature: float | None
    response_format: dict[str, Any] | None
    content_sha256: str


def plan_prompt_control(dataset_dir: Path, cases: Sequence[Case], control: PromptControl, *,
                        per_family: int = 100, repeats: int = 1,
                        temperature: float = 0.0) -> list[Ask]:
    """The calls ``control`` makes for ``cases``, in case order (then template, then repeat)."""
    chosen = selected(cases, control, check_per_family(per_family))
    images = {img: bytes_sha256(read_png(Path(dataset_dir) / img))
              for img in sorted({c.image for c in chosen})}
    asks = []
    for case in chosen:
        templates: tuple[TemplateName, ...] = (
            ("paraphrase", "lettered") if control == "templates" else ("record",))
        for template in templates:
            shown = wording(case, template)
            if shown is None:
                continue
            base = text_content_sha256(images[case.image], shown.text)
            if control == "repeats":
                for r in range(check_repeats(repeats, temperature)):
                    sha = text_sha256(canonical_json(
                        {"content": base, "temperature": temperature, "repeat": r}))
                    asks.append(Ask(case, shown, r, temperature, None, sha))
            elif control == "structured":
                schema = answer_schema(case.choices)
                sha = text_sha256(canonical_json({"content": base, "response_format": schema}))
                asks.append(Ask(case, shown, 0, None, schema, sha))
            else:
                asks.append(Ask(case, shown, 0, None, None, base))
    return asks


@dataclass(frozen=True)
class PromptControlRun:
    """The standing records (case order), the calls made and the calls reused."""

    records: list[PromptVariantRecord]
    calls_made: int
    skipped: int


def run_prompt_control(dataset_dir: Path, client: VLMClient, out_dir: Path,
                       cases: Sequence[Case], control: PromptControl, *, per_family: int = 100,
                       repeats: int = 1, temperature: float = 0.0, max_concurrency: int = 1,
                       ask: bool = True) -> PromptControlRun:
    """Ask ``control``'s calls for the dimOS ``cases``, resuming what is journalled; write its
    standing-records file (case order).

    With ``ask`` off the standing file of an earlier run is removed (its journal stays), so the
    file always belongs to the current answers, as ``flips.jsonl`` does.
    """
    dataset_dir, out_dir = Path(dataset_dir), Path(out_dir)
    standing_file, journal_file = PROMPT_FILES[control]
    if not ask:
        (out_dir / standing_file).unlink(missing_ok=True)
        return PromptControlRun([], 0, 0)
    generation = client.generation
    config_hash = generation.config_hash()
    asks = plan_prompt_control(dataset_dir, cases, control, per_family=per_family,
                               repeats=repeats, temperature=temperature)
    pngs = {img: read_png(dataset_dir / img) for img in sorted({a.case.image for a in asks})}

    def key(a: Ask) -> Key:
        return (a.case.id, generation.model, config_hash, a.content_sha256, a.wording.template,
                a.repeat)

    def call(a: Ask) -> PromptVariantRecord:
        reply = client.answer_text(
            a.case, text_messages(pngs[a.case.image], a.wording.text),
            lettered=a.wording.lettered, temperature=a.temperature,
            seed=a.repeat if control == "repeats" else None, response_format=a.response_format)
        return PromptVariantRecord.model_validate({
            **reply.model_dump(exclude={"kind", "content_sha256", "spatial"}),
            "control": control, "template": a.wording.template, "repeat": a.repeat,
            "temperature": a.temperature, "text": a.wording.text, "choices": a.case.choices,
            "content_sha256": a.content_sha256})

    with exclusive_run_lock(out_dir / RUN_LOCK), \
            Journal(out_dir / journal_file, PromptVariantRecord, prompt_key) as journal:
        pending = [a for a in asks if not journal.succeeded(key(a))]
        with ThreadPoolExecutor(max_workers=max(1, max_concurrency),
                                thread_name_prefix=control) as pool:
            for record in pool.map(call, pending):
                journal.append(record)
        standing = [r for a in asks if (r := journal.get(key(a))) is not None]
    write_text_atomic(out_dir / standing_file, "".join(r.model_dump_json() + "\n"
                                                       for r in standing))
    return PromptControlRun(standing, len(pending), len(asks) - len(pending))
