"""The prompt controls' extra calls (:mod:`eval_assets.prompt_controls`): dimOS cases and spatial
(and motion) cases asked in the other templates, repeated at a temperature above 0, or with a
JSON schema (an enum of their choices; a number family's value with its unit).

Each control asks its own subset (:func:`~eval_assets.prompt_controls.selected`: up to
``per_family`` cases per family of the dataset, drawn by case id). Every request is built from
public fields only: the case's images, question and choices or unit; the paraphrase is the
family's declared paraphrase filled with the fields the question itself names. A spatial case
is sent as the run sends it (:mod:`eval_assets.model_runs.spatial`: its frames as image parts
in order, or their labelled mosaic for an endpoint that takes fewer), with the template's
question and answer line (:func:`spatial_body`). The template of record is the case's
own answer (``answers.jsonl``), so it is never asked twice. Each call is journalled
(``templates.journal.jsonl``, ``repeats.journal.jsonl``, ``structured.journal.jsonl``) and
resumed by the content shown plus the template and repeat index (a repeat's temperature and a
schema are part of the content hash); ``templates.jsonl``, ``repeats.jsonl`` and
``structured.jsonl`` hold the standing records, in case order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval_assets.atomic import write_text_atomic
from eval_assets.hashing import bytes_sha256, canonical_json, text_sha256
from eval_assets.journal import Journal, exclusive_run_lock
from eval_assets.model_runs.client import VLMClient
from eval_assets.model_runs.prompts import read_png, text_content_sha256, text_messages
from eval_assets.model_runs.scheduling import Gate, ask_each
from eval_assets.model_runs.spatial import (
    UNIT_WORDS,
    SpatialAsk,
    layout_for,
    plain_body,
    spatial_content_sha256,
    spatial_text,
)
from eval_assets.prompt_controls import (
    PromptControl,
    SpatialWording,
    TemplateName,
    Wording,
    answer_schema,
    check_per_family,
    check_repeats,
    number_schema,
    selected,
    spatial_wording,
    wording,
)
from eval_assets.schemas.chat import Message
from eval_assets.schemas.predictions import (
    RUN_LOCK,
    RUN_REPEATS,
    RUN_REPEATS_JOURNAL,
    RUN_STRUCTURED,
    RUN_STRUCTURED_JOURNAL,
    RUN_TEMPLATES,
    RUN_TEMPLATES_JOURNAL,
    ImageLayout,
    PromptVariantRecord,
)
from eval_assets.schemas.spatial import SpatialCase
from eval_assets.schemas.vqa import Case
from eval_assets.schemas.vqa_prompt import lettered_text

__all__ = ["PROMPT_FILES", "Ask", "PromptControlRun", "plan_prompt_control", "prompt_key",
           "run_prompt_control", "spatial_body"]

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
    """One call a control makes: the case (dimOS's, or a spatial one with the ``layout`` of its
    frames), its wording, the repeat index and temperature (a repeat), the response format
    (structured), and the hash of all the model is shown."""

    case: Case | SpatialCase
    wording: Wording
    repeat: int
    temperature: float | None
    response_format: dict[str, Any] | None
    content_sha256: str
    layout: ImageLayout | None = None


_UNIT_SYMBOLS = {"cm": "cm", "m": "m", "m2": "m²", "deg": "degrees"}


def spatial_body(case: SpatialCase, shown: SpatialWording) -> str:
    """The question and answer line of a spatial case in ``shown``'s template: as the run asks
    it (``plain``), its choices lettered, or a number asked on an ``Answer:`` line."""
    if shown.style == "lettered":
        assert case.choices is not None  # a choice case (prompt_controls.spatial_wording)
        return lettered_text(shown.question, case.choices)
    if shown.style == "answer_line":
        unit = "" if case.unit is None else f" {_UNIT_SYMBOLS[case.unit]}"
        said = "a count" if case.unit is None else UNIT_WORDS[case.unit]
        return (f"{shown.question}\nGive your answer ({said}) as the last line, in the form "
                f"'Answer: <number>{unit}'.")
    return plain_body(case, shown.question)


def _templates(control: PromptControl) -> tuple[TemplateName, ...]:
    return ("paraphrase", "format") if control == "templates" else ("record",)


def _variants(control: PromptControl, base: str, repeats: int, temperature: float,
              schema: dict[str, Any]) -> list[tuple[int, float | None, dict[str, Any] | None,
                                                    str]]:
    """(repeat, temperature, response format, content hash) of each call of one wording."""
    if control == "repeats":
        return [(r, temperature, None, text_sha256(canonical_json(
            {"content": base, "temperature": temperature, "repeat": r})))
            for r in range(check_repeats(repeats, temperature))]
    if control == "structured":
        return [(0, None, schema, text_sha256(canonical_json(
            {"content": base, "response_format": schema})))]
    return [(0, None, None, base)]


def plan_prompt_control(dataset_dir: Path, cases: Sequence[Case], control: PromptControl, *,
                        per_family: int = 100, repeats: int = 1, temperature: float = 0.0,
                        spatial: Sequence[SpatialCase] = (),
                        max_images: int | None = None) -> list[Ask]:
    """The calls ``control`` makes for the dimOS ``cases`` then the ``spatial`` ones (laid out
    for an endpoint taking ``max_images`` per request; None: not probed), in case order (then
    template, then repeat)."""
    check_per_family(per_family)
    chosen = selected(cases, control, per_family)
    chosen_spatial = selected(spatial, control, per_family)
    images = {img: bytes_sha256(read_png(Path(dataset_dir) / img))
              for img in sorted({c.image for c in chosen}
                                | {i for c in chosen_spatial for i in c.images})}
    asks = []
    for case in chosen:
        for template in _templates(control):
            shown = wording(case, template)
            if shown is None:
                continue
            base = text_content_sha256(images[case.image], shown.text)
            asks += [Ask(case, shown, r, t, fmt, sha) for r, t, fmt, sha in _variants(
                control, base, repeats, temperature, answer_schema(case.choices))]
    for sc in chosen_spatial:
        layout = layout_for(sc, max_images)
        schema = (answer_schema(sc.choices) if sc.choices else number_schema(sc.unit))
        for template in _templates(control):
            found = spatial_wording(sc, template)
            if found is None:
                continue
            text = spatial_text(sc, layout, spatial_body(sc, found))
            shown = Wording(template, text, found.lettered)
            base = spatial_content_sha256([images[i] for i in sc.images], text, layout)
            asks += [Ask(sc, shown, r, t, fmt, sha, layout) for r, t, fmt, sha in _variants(
                control, base, repeats, temperature, schema)]
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
                       ask: bool = True, spatial: Sequence[SpatialCase] = (),
                       max_images: int | None = None,
                       gate: Gate | None = None) -> PromptControlRun:
    """Ask ``control``'s calls for the dimOS ``cases`` and the ``spatial`` ones (``max_images``:
    the endpoint's preflight limit, as the run sends spatial cases), resuming what is
    journalled; write its standing-records file (case order).

    With ``ask`` off the standing file of an earlier run is removed (its journal stays), so the
    file always belongs to the current answers, as ``flips.jsonl`` does. ``gate`` (a
    budget's) lets each call start.
    """
    dataset_dir, out_dir = Path(dataset_dir), Path(out_dir)
    standing_file, journal_file = PROMPT_FILES[control]
    if not ask:
        (out_dir / standing_file).unlink(missing_ok=True)
        return PromptControlRun([], 0, 0)
    generation = client.generation
    config_hash = generation.config_hash()
    asks = plan_prompt_control(dataset_dir, cases, control, per_family=per_family,
                               repeats=repeats, temperature=temperature, spatial=spatial,
                               max_images=max_images)
    pngs = {img: read_png(dataset_dir / img)
            for img in sorted({a.case.image for a in asks if isinstance(a.case, Case)})}

    def messages(a: Ask) -> list[Message]:
        if isinstance(a.case, Case):
            return text_messages(pngs[a.case.image], a.wording.text)
        assert a.layout is not None  # planned with the spatial case
        return SpatialAsk(a.case, a.layout, a.wording.text, a.content_sha256).messages(
            dataset_dir)

    def key(a: Ask) -> Key:
        return (a.case.id, generation.model, config_hash, a.content_sha256, a.wording.template,
                a.repeat)

    def call(a: Ask) -> PromptVariantRecord:
        seeded = control == "repeats"
        reply = client.answer_text(
            a.case, messages(a), lettered=a.wording.lettered, temperature=a.temperature,
            seed=a.repeat if seeded else None, response_format=a.response_format)
        # Read after the call: a refusal is learnt (for good) before the reply comes back.
        refused = seeded and not client.sends_seed
        return PromptVariantRecord.model_validate({
            **reply.model_dump(exclude={"kind", "content_sha256", "spatial"}),
            "control": control, "template": a.wording.template, "repeat": a.repeat,
            "seed_refused": refused,
            "temperature": a.temperature, "text": a.wording.text, "choices": a.case.choices,
            "content_sha256": a.content_sha256})

    with exclusive_run_lock(out_dir / RUN_LOCK), \
            Journal(out_dir / journal_file, PromptVariantRecord, prompt_key) as journal:
        pending = [a for a in asks if not journal.succeeded(key(a))]
        asked = ask_each(pending, call, journal.append, max_concurrency, gate)
        standing = [r for a in asks if (r := journal.get(key(a))) is not None]
    write_text_atomic(out_dir / standing_file, "".join(r.model_dump_json() + "\n"
                                                       for r in standing))
    return PromptControlRun(standing, asked, len(asks) - len(pending))
