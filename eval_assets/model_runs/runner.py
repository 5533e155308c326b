"""Run a VLM over a public dataset: refill scheduling, resume, and the run folder.

Only ``cases.jsonl``, ``spatial_cases.jsonl`` (when present: :mod:`eval_assets.model_runs.spatial`)
and the PNGs under ``assets/`` of a dataset are ever opened; labels and the audit stay unread, so
nothing private can reach a model. With ``rotations`` each case is also
asked with its choices rotated (CircularEval): the same request built from the same public
fields, only the order of the choices differs. Requests are kept at ``max_concurrency`` in
flight: a new one starts as soon as any finishes. Each finished call is journalled before the
next one is scheduled in its place, which makes an interrupted run resumable at any point.
"""

from __future__ import annotations

import contextlib
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel

from eval_assets import progress
from eval_assets.atomic import write_text_atomic
from eval_assets.hashing import bytes_sha256, file_digest, file_sha256
from eval_assets.journal import Journal, exclusive_run_lock
from eval_assets.jsonio import write_json
from eval_assets.model_runs.batch import BatchItem, BatchRunner, custom_id
from eval_assets.model_runs.budget import Budget
from eval_assets.model_runs.client import OpenAIVLMClient, VLMClient
from eval_assets.model_runs.concurrency import (
    AdaptiveController,
    controller_for,
    fixed_concurrency,
    learnt_from,
)
from eval_assets.model_runs.controls import ControlsStage, ask_controls, controls_not_asked
from eval_assets.model_runs.ledger import (
    PROBES,
    batch_counted,
    counted_as,
    counting,
    ledger_cost,
)
from eval_assets.model_runs.prompts import (
    DESCRIPTION_PROMPT,
    description_content_sha256,
    description_messages,
    read_png,
    vqa_content_sha256,
    vqa_messages,
)
from eval_assets.model_runs.public_cases import DatasetInputError, image_checker, load_public_cases
from eval_assets.model_runs.scheduling import schedule_calls
from eval_assets.model_runs.spatial import (
    SpatialAsk,
    load_spatial_cases,
    most_images,
    plan_spatial,
    spatial_summary,
)
from eval_assets.model_runs.store import answer_key, description_key, rotation_key
from eval_assets.model_runs.summary import Record, summarise
from eval_assets.model_runs.time_controls import time_control_cases
from eval_assets.prompt_controls import check_per_family, check_repeats
from eval_assets.schemas.chat import ChatResult
from eval_assets.schemas.concurrency import ConcurrencyHistory
from eval_assets.schemas.cost import Price
from eval_assets.schemas.predictions import (
    PROMPT_CONTROLS_OFF,
    RUN_ANSWERS,
    RUN_ANSWERS_JOURNAL,
    RUN_CONFIG,
    RUN_DESCRIPTIONS,
    RUN_DESCRIPTIONS_JOURNAL,
    RUN_LOCK,
    RUN_ROTATIONS,
    RUN_ROTATIONS_JOURNAL,
    RUN_SUMMARY,
    AnswerRecord,
    DescriptionRecord,
    RotationRecord,
    RunConfig,
    RunSummary,
    rotate_choices,
)
from eval_assets.schemas.spatial import SPATIAL_CASES, SpatialCase
from eval_assets.schemas.vqa import DATASET_CASES, Case
from eval_assets.served_model import ServedModelWarning, check_served
from eval_assets.time_controls import CONTROLS, Control, check_share


@dataclass(frozen=True)
class Frame:
    """One distinct image of a dataset, to be described."""

    frame: str
    image: str


@dataclass(frozen=True)
class Rotation:
    """One extra variant of a case: its choices shown rotated by ``rotation`` (1 .. k - 1)."""

    case: Case
    rotation: int

    @property
    def key(self) -> tuple[str, int]:
        return (self.case.id, self.rotation)

    def shown(self) -> Case:
        """The public case as the model is asked it: only the order of the choices differs."""
        return Case(id=self.case.id, image=self.case.image, question=self.case.question,
                    choices=rotate_choices(self.case.choices, self.rotation))


def rotations_of(cases: Sequence[Case]) -> list[Rotation]:
    """Every case's rotations 1 .. k - 1 (k choices), in case order then rotation order."""
    return [Rotation(c, r) for c in cases for r in range(1, len(c.choices))]


@dataclass(frozen=True)
class RunResult:
    """What a run left behind and how many model calls it made."""

    out_dir: Path
    summary: RunSummary
    calls_made: int
    skipped: int
    batch_in_flight: str | None = None
    not_asked: Mapping[str, str] | None = None
    """The controls asked for that this run did not ask (by ``run_model`` keyword), each with
    why: the callers say so aloud, none is dropped in silence."""


def frames_of(cases: Sequence[Case]) -> list[Frame]:
    """The distinct images of ``cases``, sorted by path; the frame id is the file stem."""
    images = sorted({c.image for c in cases})
    return [Frame(frame=PurePosixPath(i).stem, image=i) for i in images]


def public_fingerprint(dataset_dir: Path) -> str:
    """Hash of everything public in a dataset: ``cases.jsonl`` and every image it names.

    Two datasets with the same folder name but other content get other fingerprints, so their
    default run folders differ. Labels and the audit are not read: they are private.
    """
    dataset_dir = Path(dataset_dir)
    # The hash of: the cases file's bytes, then per image its path, a NUL and its raw digest.
    parts = [(dataset_dir / DATASET_CASES).read_bytes()]
    cases = load_public_cases(dataset_dir)
    for image in sorted({c.image for c in cases}):
        parts += [image.encode("utf-8") + b"\0", file_digest(dataset_dir / image)]
    # Spatial cases only when present, so a dataset without them keeps its fingerprint.
    spatial = load_public_spatial_cases(dataset_dir, cases)
    if spatial:
        parts.append((dataset_dir / SPATIAL_CASES).read_bytes())
        for image in sorted({i for c in spatial for i in c.images}):
            parts += [image.encode("utf-8") + b"\0", file_digest(dataset_dir / image)]
    return bytes_sha256(b"".join(parts))


def _check_unchanged(dataset_dir: Path, public_sha256: str, model: str) -> None:
    """Refuse to write standing answers when the dataset was replaced during the run: some of
    them would answer the old content under the new content's identity."""
    if public_fingerprint(dataset_dir) != public_sha256:
        raise DatasetInputError(
            f"{dataset_dir}: the dataset was replaced while {model} was answering it; its answers "
            "are journalled by content, so run the predictions again: nothing answered is asked "
            "twice")


def load_public_spatial_cases(dataset_dir: Path, cases: Sequence[Case]) -> list[SpatialCase]:
    """The spatial cases of a public dataset (none without ``spatial_cases.jsonl``), validated,
    in file order; ids distinct from the ``cases``' and images checked like theirs."""
    try:
        return load_spatial_cases(Path(dataset_dir), {c.id for c in cases}, image_checker())
    except DatasetInputError:
        raise
    except ValueError as exc:  # a malformed line or a repeated id: bad input, exit 2
        raise DatasetInputError(str(exc)) from exc


def _content_hashes(dataset_dir: Path, cases: Sequence[Case], frames: Sequence[Frame],
                    rotations: Sequence[Rotation] = ()) -> dict[str | tuple[str, int], str]:
    """The model-facing content hash of every case (by case id), frame (by image path) and
    rotation (by (case id, rotation)).

    Each image is read once, here, so that what is reused is decided by the bytes a model would
    be sent now, not by names.
    """
    image_sha = {image: bytes_sha256(read_png(dataset_dir / image))
                 for image in sorted({c.image for c in cases})}
    hashes: dict[str | tuple[str, int], str] = {
        c.id: vqa_content_sha256(image_sha[c.image], c.question, c.choices) for c in cases}
    hashes.update({f.image: description_content_sha256(image_sha[f.image]) for f in frames})
    for variant in rotations:
        shown = variant.shown()
        hashes[variant.key] = vqa_content_sha256(image_sha[shown.image], shown.question,
                                                 shown.choices)
    return hashes


def _dump_lines(records: Sequence[BaseModel]) -> str:
    # Pydantic's compact JSON, as the journals hold the same records (not jsonio's json.dumps
    # lines, whose spaces would change the files' bytes).
    return "".join(r.model_dump_json() + "\n" for r in records)


def _write_document(path: Path, model: BaseModel, exclude: set[str] | None = None) -> None:
    write_json(path, model.model_dump(mode="json", exclude=exclude), sort_keys=True)


def run_model(
    dataset_dir: Path,
    client: VLMClient,
    out_dir: Path,
    *,
    max_concurrency: int | None = None,
    describe: bool = True,
    rotations: bool = False,
    flips: bool = False,
    time_flips: bool = False,
    repeat_frames: bool = False,
    time_control_share: float = 1.0,
    templates: bool = PROMPT_CONTROLS_OFF.templates,
    repeats: int = PROMPT_CONTROLS_OFF.repeats,
    repeat_temperature: float = PROMPT_CONTROLS_OFF.repeat_temperature,
    structured: bool = PROMPT_CONTROLS_OFF.structured,
    prompt_control_cases: int = PROMPT_CONTROLS_OFF.prompt_control_cases,
    on_record: Callable[[Record], None] | None = None,
    price: Price | None = None,
    budget_usd: float | None = None,
    batch: BatchRunner | None = None,
    controller: AdaptiveController | None = None,
) -> RunResult:
    """Answer every public case (and describe every frame) once, resuming what is stored.

    Writes ``config.json`` first, journals each call as it finishes, and at the end writes
    ``answers.jsonl`` / ``descriptions.jsonl`` (standing record per case / frame, dataset order)
    and ``summary.json``. ``on_record`` is called after each record is durable.

    ``rotations`` (CircularEval): also ask each case of k choices k - 1 more times, with its
    choices rotated by 1 .. k - 1, journalled and resumed by content like the answers; their
    standing records go to ``rotations.jsonl`` (case order, then rotation). ``answers.jsonl``
    keeps only the original order. Without it a ``rotations.jsonl`` of an earlier run is removed
    (its journal stays, so asking again later repeats nothing), so the file always belongs to
    the current answers. ``flips`` (FlipEval) likewise asks each left/right case about its
    mirrored image (``flips.jsonl``, :mod:`eval_assets.model_runs.flips`). ``time_flips``
    (TimeFlip) and ``repeat_frames`` (RepeatFrames) ask the multi-frame spatial cases of their
    families again with the frames reversed, or each shown twice, for the share
    ``time_control_share`` of them (``time_flips.jsonl``, ``repeat_frames.jsonl``:
    :mod:`eval_assets.model_runs.time_controls`). The prompt controls
    (:mod:`eval_assets.model_runs.prompt_controls`) ask up to ``prompt_control_cases`` dimOS
    and spatial cases per family again: ``templates`` in the paraphrase and format templates
    (``templates.jsonl``), ``repeats`` > 1 that many times at ``repeat_temperature``
    (``repeats.jsonl``), ``structured`` with a JSON schema of the choices, or of a number with
    its unit, where the preflight found structured output enforced (``structured.jsonl``).

    Spatial cases (``spatial_cases.jsonl``, when present) are answered too, after dimOS's, into
    the same journal and ``answers.jsonl``: their frames as image parts in order, or as one
    labelled mosaic when the preflight found the endpoint takes fewer images per request
    (:mod:`eval_assets.model_runs.spatial`); ``summary.json``'s ``spatial`` says which.

    Every call the run's client completes is counted once in the run folder's ``usage.jsonl``
    (:mod:`eval_assets.model_runs.ledger`): ``price`` (the model's, from the models file) prices
    them all into ``summary.json``'s cost, by kind (answers, descriptions, rotations, each
    control, probes), what the server billed. ``budget_usd`` (needs ``price``) stops asking
    before this invocation could spend more, every kind of call counted and each stage gated
    (:mod:`eval_assets.model_runs.budget`); the run is then left for a rerun to continue.
    A control that cannot be asked (through the Batch API, or structured output where the
    preflight found no schema enforced) is named in ``RunResult.not_asked`` and logged.
    ``batch`` sends the pending calls through the Batch API instead
    (:mod:`eval_assets.model_runs.batch`); a batch still in flight leaves the run incomplete
    and its id in ``RunResult.batch_in_flight`` and the run folder.

    A model reached over HTTP gets adaptive concurrency (:mod:`eval_assets.model_runs.concurrency`,
    or the given ``controller``), capped by ``max_concurrency`` (None: the endpoint's explicit
    ``max_concurrency``, else :data:`~eval_assets.model_runs.concurrency.DEFAULT_ADAPTIVE_CAP`);
    its limit's history goes into ``summary.json``. A local model keeps ``max_concurrency``
    (None: its entry's) in flight.
    """
    if controller is None:
        # Where the last run in this folder left off, when no call group of the endpoint in
        # this process has learnt more since.
        controller = controller_for(client, max_concurrency,
                                    start=learnt_from(_previous_concurrency(out_dir)))
    max_concurrency = controller.cap if controller is not None else (
        max_concurrency or fixed_concurrency(client))
    if max_concurrency < 1:
        raise ValueError(f"max_concurrency is {max_concurrency}; it must be at least 1")
    check_share(time_control_share)  # refused before any call, not after the answers
    check_per_family(prompt_control_cases)
    check_repeats(repeats, repeat_temperature)
    # The time controls this run asks: like FlipEval's, their calls are not batched.
    switches: dict[Control, bool] = {"time_flip": time_flips, "repeat_frames": repeat_frames}
    timing = [control for control in CONTROLS if switches[control] and batch is None]
    dataset_dir = Path(dataset_dir).resolve()
    out_dir = Path(out_dir)
    cases = load_public_cases(dataset_dir)
    spatial = load_public_spatial_cases(dataset_dir, cases)
    frames = frames_of(cases) if describe else []
    variants = rotations_of(cases) if rotations else []
    generation = client.generation
    config_hash = generation.config_hash()
    run_config = RunConfig(
        dataset=str(dataset_dir),
        cases_sha256=file_sha256(dataset_dir / DATASET_CASES),
        num_cases=len(cases), num_frames=len(frames), generation=generation,
        spatial_cases_sha256=file_sha256(dataset_dir / SPATIAL_CASES) if spatial else None,
        num_spatial_cases=len(spatial) if spatial else None,
        config_hash=config_hash, describe=describe,
        description_prompt=DESCRIPTION_PROMPT if describe else None, rotations=rotations,
        max_concurrency=max_concurrency, client=client.public_settings(),
    )
    model = generation.model
    budget = _budget(budget_usd, price, generation.max_tokens)
    # What the model is shown, by content: the metrics refuse these answers against any other.
    public_sha256 = public_fingerprint(dataset_dir)
    # Every call of the run is counted where the chat client completes it (and told to the
    # budget), here and in the controls' stage below.
    with exclusive_run_lock(out_dir / RUN_LOCK), \
            counting(client, out_dir, budget) as ledger, \
            Journal(out_dir / RUN_ANSWERS_JOURNAL, AnswerRecord, answer_key) as answers, \
            Journal(out_dir / RUN_DESCRIPTIONS_JOURNAL, DescriptionRecord,
                    description_key) as descriptions, \
            _rotation_journal(out_dir, rotations) as rotated:
        _write_document(out_dir / RUN_CONFIG, run_config)
        # The preflight probes up to the most frames any request will carry: a re-ask showing
        # every frame twice carries twice a case's, and would otherwise go as a mosaic.
        with ledger.phase(PROBES):
            _prepare(client, out_dir, controller, max([
                most_images(spatial),
                *(most_images(time_control_cases(spatial, control, time_control_share))
                  for control in timing)]))
        content = _content_hashes(dataset_dir, cases, frames, variants)
        # How each spatial case is asked depends on the images per request the preflight found.
        max_images = getattr(getattr(client, "capabilities", None), "max_images", None)
        asks = plan_spatial(dataset_dir, spatial, max_images)
        answer_keys = {c.id: (c.id, model, config_hash, content[c.id])
                       for c in cases}
        answer_keys.update({i: (i, model, config_hash, a.content_sha256)
                            for i, a in asks.items()})
        frame_keys = {f.frame: (f.frame, model, config_hash, content[f.image]) for f in frames}
        rotation_keys = {v.key: (v.case.id, model, config_hash, content[v.key])
                         for v in variants}
        pending_cases = [c for c in cases if not answers.succeeded(answer_keys[c.id])]
        pending_spatial = [a for a in asks.values()
                           if not answers.succeeded(answer_keys[a.case.id])]
        pending_frames = [f for f in frames if not descriptions.succeeded(frame_keys[f.frame])]
        pending_rotations = [v for v in variants
                             if rotated is None or not rotated.succeeded(rotation_keys[v.key])]
        calls = 0
        in_flight: str | None = None
        bar: list[progress.Advance] = []  # set once the loop starts; tasks only run inside it

        def record(journal: Journal, result: Record) -> None:
            nonlocal calls
            journal.append(result)  # its call was counted by the ledger as it completed
            calls += 1  # only the main thread reads it, after the pool has shut down
            bar[0](1)
            if on_record is not None:
                on_record(result)

        # Each task says what its call is for: the ledger counts it as such.
        def answer_task(case: Case) -> Callable[[], None]:
            return counted_as("answers", lambda: record(answers, client.answer(
                case, read_png(dataset_dir / case.image)).model_copy(
                    update={"content_sha256": content[case.id]})))

        def spatial_task(ask: SpatialAsk) -> Callable[[], None]:
            return counted_as("answers", lambda: record(answers, client.answer_spatial(
                ask, ask.messages(dataset_dir)).model_copy(
                    update={"content_sha256": ask.content_sha256})))

        def rotation_task(variant: Rotation) -> Callable[[], None]:
            def ask() -> None:
                assert rotated is not None
                shown = variant.shown()
                reply = client.answer(shown, read_png(dataset_dir / shown.image))
                record(rotated, RotationRecord.model_validate({
                    **reply.model_dump(exclude={"kind"}), "rotation": variant.rotation,
                    "choices": shown.choices, "content_sha256": content[variant.key]}))
            return counted_as("rotations", ask)

        def describe_task(frame: Frame) -> Callable[[], None]:
            return counted_as("descriptions", lambda: record(descriptions, client.describe(
                frame.frame, frame.image, read_png(dataset_dir / frame.image)).model_copy(
                    update={"content_sha256": content[frame.image]})))

        # Each case's rotations right after it: a model that caches by prompt prefix (the
        # local blind baseline) then finds the case's question still cached.
        by_case: dict[str, list[Rotation]] = {}
        for v in pending_rotations:
            by_case.setdefault(v.case.id, []).append(v)
        pending_ids = {c.id for c in pending_cases}
        tasks = [task for c in cases for task in (
            ([answer_task(c)] if c.id in pending_ids else [])
            + [rotation_task(v) for v in by_case.get(c.id, [])])]
        tasks += [spatial_task(a) for a in pending_spatial]
        tasks += [describe_task(f) for f in pending_frames]
        label = f"{generation.model}: answers{', rotations' if rotations else ''} and descriptions"
        with progress.task(label, total=len(tasks)) as advance:
            bar.append(advance)
            if batch is not None:
                items = _batch_items(client, dataset_dir, pending_cases, pending_rotations,
                                     pending_frames, content,
                                     # Marked as batch calls: billed at the batch price.
                                     lambda kind, result: record(
                                         _journal_of(kind, answers, rotated, descriptions),
                                         batch_counted(ledger, kind, result)),
                                     (answer_keys, rotation_keys, frame_keys), pending_spatial)
                in_flight = batch.run(items, out_dir).in_flight
            else:
                schedule_calls(iter(tasks) if budget is None else budget.gate(iter(tasks)),
                          max_concurrency, controller)

        standing_answers = [r for i in [*(c.id for c in cases), *asks]
                            if (r := answers.get(answer_keys[i])) is not None]
        standing_descriptions = [d for f in frames
                                 if (d := descriptions.get(frame_keys[f.frame])) is not None]
        # A stored record stands for its content; the rotation number is the current one.
        standing_rotations = [o.model_copy(update={"rotation": v.rotation})
                              for v in variants if rotated is not None
                              and (o := rotated.get(rotation_keys[v.key])) is not None]
    _check_unchanged(dataset_dir, public_sha256, model)
    answer_summary = summarise(standing_answers, len(cases) + len(spatial))
    description_summary = summarise(standing_descriptions, len(frames)) if describe else None
    rotation_summary = summarise(standing_rotations, len(variants)) if rotations else None
    complete = answer_summary.success == len(cases) + len(spatial) and all(
        s is None or s.success == s.total for s in (description_summary, rotation_summary))
    # The server's word checked: which model each standing reply says answered.
    served = check_served(f"{model} on {dataset_dir.name}", model, (
        r.served_model for group in (standing_answers, standing_descriptions, standing_rotations)
        for r in group), getattr(getattr(client, "capabilities", None), "listed_models", None))
    if served.warning is not None:
        warnings.warn(served.warning, ServedModelWarning, stacklevel=2)
    summary = RunSummary(model=model, config_hash=config_hash, public_sha256=public_sha256,
                         complete=complete,
                         answers=answer_summary, descriptions=description_summary,
                         rotations=rotation_summary,
                         cost=None,  # priced below, once the controls have asked too
                         concurrency=(controller.history() if controller is not None and calls
                                      else _previous_concurrency(out_dir)),
                         spatial=spatial_summary(spatial, max_images, Counter(
                             r.spatial.layout for r in standing_answers if r.spatial)),
                         served_models=served.served_models, served_mismatch=served.mismatch)
    write_text_atomic(out_dir / RUN_ANSWERS, _dump_lines(standing_answers))
    if describe:
        write_text_atomic(out_dir / RUN_DESCRIPTIONS, _dump_lines(standing_descriptions))
    if rotations:
        write_text_atomic(out_dir / RUN_ROTATIONS, _dump_lines(standing_rotations))
    else:
        (out_dir / RUN_ROTATIONS).unlink(missing_ok=True)
    # The controls: FlipEval (eval_assets.model_runs.flips), TimeFlip and RepeatFrames
    # (eval_assets.model_runs.time_controls), the prompt controls
    # (eval_assets.model_runs.prompt_controls). Counted and budgeted like the answers; not sent
    # through the Batch API (a batched run does not ask them, and says so); structured answers
    # only where the preflight found the endpoint enforces a schema (ignored or refused, the
    # calls would measure nothing).
    not_asked = controls_not_asked(
        f"{model} on {dataset_dir.name}", batch is not None, client, flips=flips,
        time_flips=time_flips, repeat_frames=repeat_frames, templates=templates,
        repeats=repeats > 1, structured=structured)
    with counting(client, out_dir, budget) as ledger:
        flipped, timed, prompted = ask_controls(
            ControlsStage(dataset_dir, client, out_dir, ledger, budget, max_concurrency,
                          controller),
            cases, spatial, max_images, not_asked,
            wanted={"flips": flips, "templates": templates, "repeats": repeats > 1,
                    "structured": structured}, timing=timing,
            time_control_share=time_control_share, prompt_control_cases=prompt_control_cases,
            repeats=repeats, repeat_temperature=repeat_temperature)
        # Every call of the run folder, this invocation's and earlier ones', as billed.
        summary = summary.model_copy(update={"cost": ledger_cost(
            price, ledger.records(), budget.outcome() if budget is not None else None)})
    _write_document(out_dir / RUN_SUMMARY, summary,
                    exclude={"concurrency"} if summary.concurrency is None else None)
    skipped = (len(cases) + len(spatial) - len(pending_cases) - len(pending_spatial)
               + len(frames) - len(pending_frames)
               + len(variants) - len(pending_rotations) + flipped.skipped
               + sum(t.skipped for t in timed) + sum(p.skipped for p in prompted))
    return RunResult(out_dir=out_dir, summary=summary,
                     calls_made=(calls + flipped.calls_made + sum(t.calls_made for t in timed)
                                 + sum(p.calls_made for p in prompted)),
                     skipped=skipped,
                     batch_in_flight=in_flight, not_asked=not_asked or None)


def _batch_items(client: VLMClient, dataset_dir: Path, cases: Sequence[Case],
                 rotations: Sequence[Rotation], frames: Sequence[Frame],
                 content: dict[str | tuple[str, int], str],
                 record: Callable[[str, Record], None],
                 keys: tuple[Mapping[str, Sequence[str]], Mapping[tuple[str, int], Sequence[str]],
                             Mapping[str, Sequence[str]]],
                 spatial: Sequence[SpatialAsk] = ()) -> list[BatchItem]:
    """The pending calls as batch lines, each journalled like a direct call when its reply
    comes (the record the client would have made, by the same content hash)."""
    if not isinstance(client, OpenAIVLMClient):
        raise ValueError("batch mode needs an OpenAI-compatible endpoint (base_url)")
    answer_keys, rotation_keys, frame_keys = keys
    items: list[BatchItem] = []
    for case in cases:
        png = read_png(dataset_dir / case.image)

        def answer_record(result: ChatResult, c: Case = case) -> None:
            record("answer", client.answer_from(c, result).model_copy(
                update={"content_sha256": content[c.id]}))
        items.append(BatchItem(
            custom_id("answer", answer_keys[case.id]),
            client.request_body(vqa_messages(png, case.question, case.choices)), answer_record))
    for variant in rotations:
        shown = variant.shown()
        png = read_png(dataset_dir / shown.image)

        def rotation_record(result: ChatResult, v: Rotation = variant, s: Case = shown) -> None:
            reply = client.answer_from(s, result)
            record("rotation", RotationRecord.model_validate({
                **reply.model_dump(exclude={"kind"}), "rotation": v.rotation,
                "choices": s.choices, "content_sha256": content[v.key]}))
        items.append(BatchItem(
            custom_id("rotation", rotation_keys[variant.key]),
            client.request_body(vqa_messages(png, shown.question, shown.choices)),
            rotation_record))
    for ask in spatial:
        def spatial_record(result: ChatResult, a: SpatialAsk = ask) -> None:
            record("answer", client.spatial_answer_from(a, result).model_copy(
                update={"content_sha256": a.content_sha256}))
        items.append(BatchItem(custom_id("answer", answer_keys[ask.case.id]),
                               client.request_body(ask.messages(dataset_dir)), spatial_record))
    for frame in frames:
        png = read_png(dataset_dir / frame.image)

        def description_record(result: ChatResult, f: Frame = frame) -> None:
            record("description", client.describe_from(f.frame, f.image, result).model_copy(
                update={"content_sha256": content[f.image]}))
        items.append(BatchItem(
            custom_id("description", frame_keys[frame.frame]),
            client.request_body(description_messages(png)), description_record))
    return items


def _journal_of(kind: str, answers: Journal[AnswerRecord], rotated: Journal[RotationRecord] | None,
                descriptions: Journal[DescriptionRecord]) -> Journal[Any]:
    journals: dict[str, Journal[Any] | None] = {
        "answer": answers, "rotation": rotated, "description": descriptions}
    journal = journals[kind]
    assert journal is not None  # rotation items exist only with the rotations journal
    return journal


def _budget(budget_usd: float | None, price: Price | None, max_tokens: int) -> Budget | None:
    if budget_usd is None:
        return None
    if price is None:
        raise ValueError(f"a budget of ${budget_usd} needs the model's price; add 'price: "
                         "{input_per_m: ..., output_per_m: ...}' (USD per 1M tokens) to its "
                         "entry in the models file")
    return Budget(budget_usd, price, max_tokens)


def _prepare(client: VLMClient, out_dir: Path, controller: AdaptiveController | None,
             images: int) -> None:
    """The endpoint's capability preflight (endpoint.json), before any case is asked, probing
    up to ``images`` per request when a spatial case shows more than one frame; its probes are
    counted by the run's ledger like any call (and so by a budget)."""
    prepare = getattr(client, "prepare", None)
    if prepare is None:
        return
    kwargs: dict[str, Any] = {"images": images} if images > 1 else {}
    with contextlib.nullcontext() if controller is None else controller.ignoring():
        prepare(out_dir, **kwargs)


def _previous_concurrency(out_dir: Path) -> ConcurrencyHistory | None:
    """The limit's history of the run that made the standing records, kept by a rerun that made
    no call (so that it rewrites identical files)."""
    try:
        return RunSummary.model_validate_json(
            (out_dir / RUN_SUMMARY).read_text(encoding="utf-8")).concurrency
    except (OSError, ValueError):
        return None


@contextlib.contextmanager
def _rotation_journal(out_dir: Path, rotations: bool) -> Iterator[Journal[RotationRecord] | None]:
    """The rotations journal when rotations are asked; no file is created otherwise."""
    if not rotations:
        yield None
        return
    with Journal(out_dir / RUN_ROTATIONS_JOURNAL, RotationRecord, rotation_key) as journal:
        yield journal
