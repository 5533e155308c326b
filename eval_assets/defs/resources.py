"""Dagster resources: configuration that selects paths and strategies for the core library."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from dagster import ConfigurableResource
from pydantic import ConfigDict, Field, field_validator

from eval_assets.defs.partitions import declared_model, declared_models
from eval_assets.env_names import check_env_var_name
from eval_assets.layout import (
    StorageLayout,
    default_annotations_dir,
    default_judge_file,
    default_labels_dir,
    default_recordings_dir,
    default_storage_root,
    find_recording_file,
    overrides_file_for,
)
from eval_assets.metrics.embedders import CosineSimilarity, SentenceTransformerEmbedder
from eval_assets.metrics.judge import JudgeConfig, OpenAIJudge, open_judge, self_judging_models
from eval_assets.metrics.vision import SimilarityScorer
from eval_assets.model_runs.client import ClientSettings, OpenAIVLMClient, open_model
from eval_assets.perception import PerceptionConfig
from eval_assets.perception.protocols import Detector, Segmenter
from eval_assets.schemas.endpoint import Endpoint
from eval_assets.schemas.predictions import PROMPT_CONTROLS_OFF, ModelSpec, PromptControls
from eval_assets.vqa.authors import DEFAULT_VOCABULARY, AuthorConfig, QuestionAuthor, build_author
from eval_assets.vqa.declarations import family_names


class ProjectStorage(ConfigurableResource):
    """Where recordings are read from and where every asset writes its files.

    Empty strings mean the defaults: ``$EVAL_ASSETS_RECORDINGS`` / ``data/recordings``,
    ``$EVAL_ASSETS_HOME`` / ``.eval_assets`` under the working directory, and
    ``$EVAL_ASSETS_LABELS`` / ``data/labels`` for the label overrides.
    """

    recordings_dir: str = ""
    storage_root: str = ""
    allow_pickle: bool = False
    labels_dir: str = ""

    def recordings_path(self) -> Path:
        """The folder watched for ``*.db`` recordings."""
        if self.recordings_dir:
            return Path(self.recordings_dir).resolve()
        return default_recordings_dir()

    def recording_file(self, partition_key: str) -> Path:
        """The recording file behind a partition key (its name in NFC or NFD alike)."""
        return find_recording_file(self.recordings_path(), partition_key)

    def labels_path(self) -> Path:
        """Where the label overrides are kept: ``labels_dir``, else ``$EVAL_ASSETS_LABELS`` /
        ``data/labels``."""
        return Path(self.labels_dir).resolve() if self.labels_dir else default_labels_dir()

    def overrides_file(self, partition_key: str) -> Path:
        """The label overrides file of a recording partition (it may not exist)."""
        return overrides_file_for(self.labels_path(), partition_key)

    def layout(self) -> StorageLayout:
        """The output layout rooted at the configured storage root."""
        root = Path(self.storage_root).resolve() if self.storage_root else default_storage_root()
        return StorageLayout(root)


# One source of truth for the defaults: the core configs (the author's, the endpoint's).
_AUTHOR_DEFAULTS = AuthorConfig().model_dump()
_ENDPOINT_DEFAULTS = Endpoint().model_dump()


class QuestionAuthorResource(ConfigurableResource):
    """Which question author proposes questions, and its per-frame proposal limits.

    ``author`` is ``"vocabulary"`` (offline, deterministic) or ``"vlm"`` (any OpenAI-compatible
    endpoint at ``vlm_base_url`` serving ``vlm_model``; the key is read from the environment
    variable named by ``vlm_api_key_env``, empty for endpoints without keys).
    """

    author: str = _AUTHOR_DEFAULTS["author"]
    vocabulary: list[str] = Field(default_factory=lambda: list(DEFAULT_VOCABULARY))
    families: list[str] = Field(default_factory=lambda: list(family_names("dimos")))
    seed: int = _AUTHOR_DEFAULTS["seed"]
    max_names_per_family: int = _AUTHOR_DEFAULTS["max_names_per_family"]
    max_groups_per_family: int = _AUTHOR_DEFAULTS["max_groups_per_family"]
    max_group_size: int = _AUTHOR_DEFAULTS["max_group_size"]
    max_proposals_per_frame: int = _AUTHOR_DEFAULTS["max_proposals_per_frame"]
    vlm_base_url: str = ""
    vlm_model: str = ""
    vlm_api_key_env: str = ""
    vlm_timeout_s: float = _ENDPOINT_DEFAULTS["timeout_s"]
    vlm_max_retries: int = _ENDPOINT_DEFAULTS["max_retries"]

    # Dagster runs a resource's validators when it builds the resource from run config: a key
    # pasted as the name fails there, and hide_input_in_errors keeps it out of the event log.
    model_config = ConfigDict(hide_input_in_errors=True)

    @field_validator("vlm_api_key_env")
    @classmethod
    def _a_name_not_a_key(cls, value: str) -> str:
        return check_env_var_name(value, "question_author resource field vlm_api_key_env")

    def author_config(self) -> AuthorConfig:
        """The core library's config (validated: an unknown author or family is an error)."""
        own = {name: getattr(self, name) for name in AuthorConfig.model_fields if name != "vlm"}
        return AuthorConfig.model_validate({**own, "vlm": Endpoint(
            base_url=self.vlm_base_url, model=self.vlm_model,
            api_key_env=self.vlm_api_key_env, timeout_s=self.vlm_timeout_s,
            max_retries=self.vlm_max_retries)})

    def build(self) -> QuestionAuthor:
        """The configured author."""
        return build_author(self.author_config())


class PerceptionResource(ConfigurableResource):
    """Which detector and segmenter produce the perception evidence, and what they need.

    ``detector``: ``"color"`` (offline colour/shape detector) or ``"moondream"`` (Moondream Cloud
    with the key read from the environment variable named by ``moondream_api_key_env``, or a
    Moondream Station at ``moondream_endpoint``). ``segmenter``: ``"box_region"``,
    ``"grabcut"`` or ``"edgetam"`` (needs ``edgetam_checkpoint``). ``"truth"`` (both): exact
    evidence from the truth files beside a simulated or synthesized recording; a partition
    without them fails naming the file. An empty ``vocabulary`` queries
    every colour × shape name of the sample scene, present or not. ``objects`` and
    ``references``: where the tracks' objects come from and the taught names' folder
    (:class:`~eval_assets.perception.PerceptionConfig`).
    """

    detector: str = "color"
    segmenter: str = "box_region"
    moondream_api_key_env: str = "MOONDREAM_API_KEY"
    moondream_endpoint: str = ""
    edgetam_checkpoint: str = ""
    edgetam_config: str = ""
    vocabulary: list[str] = Field(default_factory=list)
    objects: str = ""
    references: str = ""

    # A key pasted as the name fails here, kept out of the event log (see QuestionAuthorResource).
    model_config = ConfigDict(hide_input_in_errors=True)

    @field_validator("moondream_api_key_env")
    @classmethod
    def _a_name_not_a_key(cls, value: str) -> str:
        return check_env_var_name(value, "perception resource field moondream_api_key_env",
                                  example="MOONDREAM_API_KEY")

    def perception_config(self) -> PerceptionConfig:
        """The core library's config."""
        return PerceptionConfig(
            detector=self.detector, segmenter=self.segmenter,
            moondream_api_key_env=self.moondream_api_key_env,
            moondream_endpoint=self.moondream_endpoint,
            edgetam_checkpoint=self.edgetam_checkpoint, edgetam_config=self.edgetam_config,
            vocabulary=tuple(self.vocabulary), objects=self.objects,
            references=self.references,
        )

    def build(self, recording: Path | None = None) -> tuple[Detector, Segmenter]:
        """The configured detector and segmenter (``ConfigurationError`` when misconfigured).

        ``recording``: the partition's file; ``truth`` reads the truth files beside it.
        """
        config = self.perception_config()
        return config.build_detector(recording), config.build_segmenter(recording)


class VLMClientResource(ConfigurableResource):
    """How models under test are called: backed by :class:`OpenAIVLMClient`.

    The ``predictions`` asset opens each model's endpoint from its entry in the models file
    (``$EVAL_ASSETS_MODELS`` / ``data/models.yaml``, read once by
    :func:`~eval_assets.defs.partitions.declared_models`; a local baseline is served in-process):
    the fields the entry sets win, the others are taken from here (:meth:`defaults`; the
    defaults are the endpoint's). ``base_url`` + ``model`` configure :meth:`client` for one
    fixed endpoint. ``api_key_env`` is the NAME of the variable holding the key.
    ``rotations`` (CircularEval, on by default for the report) also asks every case with its
    choices rotated: a case of k choices costs k calls instead of one. ``flips`` (FlipEval, on
    by default) also asks every left/right case about its mirrored image: one more call each.
    ``time_flips`` (TimeFlip) and ``repeat_frames`` (RepeatFrames), on by default, ask each
    multi-frame spatial case of their families again with its frames reversed, or each shown
    twice: one more call each, for the share ``time_control_share`` of the cases (1: all; the
    draw is by case id, so the same cases every time). Like FlipEval they are not asked by a
    budgeted or batched run. The prompt controls (validity.md) are off by default: each adds
    calls per case of up to ``prompt_control_cases`` cases per family and recording (default
    100), dimOS's and the spatial and motion ones: ``templates`` two (the family's declared
    paraphrase and the format template: lettered choices, or a number on an ``Answer:`` line),
    ``repeats`` k (at ``repeat_temperature``; 1: off), ``structured`` one (a JSON schema of the
    choices, or of a number with its unit; asked only where the preflight found structured
    output enforced). A models-file entry that sets a prompt control overrides the value here for
    its model (:meth:`ModelSpec.prompt_controls`).
    """

    base_url: str = ""
    model: str = ""
    api_key_env: str = ""
    temperature: float = 0.0
    max_tokens: int = _ENDPOINT_DEFAULTS["max_tokens"]
    timeout_s: float = _ENDPOINT_DEFAULTS["timeout_s"]
    # 0: not set here, so a model reached over HTTP adapts its concurrency (a local model keeps
    # its entry's); a number caps every model that does not set its own.
    max_concurrency: int = 0
    max_retries: int = _ENDPOINT_DEFAULTS["max_retries"]
    backoff_base_s: float = _ENDPOINT_DEFAULTS["backoff_base_s"]
    backoff_max_s: float = _ENDPOINT_DEFAULTS["backoff_max_s"]
    retry_after_max_s: float = _ENDPOINT_DEFAULTS["retry_after_max_s"]
    announce_wait_s: float = _ENDPOINT_DEFAULTS["announce_wait_s"]
    max_reply_chars: int = 0
    rotations: bool = True
    flips: bool = True
    time_flips: bool = True
    repeat_frames: bool = True
    time_control_share: float = 1.0
    templates: bool = PROMPT_CONTROLS_OFF.templates
    repeats: int = PROMPT_CONTROLS_OFF.repeats
    repeat_temperature: float = PROMPT_CONTROLS_OFF.repeat_temperature
    structured: bool = PROMPT_CONTROLS_OFF.structured
    prompt_control_cases: int = PROMPT_CONTROLS_OFF.prompt_control_cases

    # A key pasted as the name fails here, kept out of the event log (see QuestionAuthorResource).
    model_config = ConfigDict(hide_input_in_errors=True)

    @field_validator("api_key_env")
    @classmethod
    def _a_name_not_a_key(cls, value: str) -> str:
        return check_env_var_name(value, "vlm resource field api_key_env")

    def defaults(self) -> Endpoint:
        """The endpoint settings that do not pick an endpoint (empty strings and 0: unset)."""
        # Only what is set counts as explicit: an explicit max_concurrency caps adaptive
        # concurrency (eval_assets.model_runs.concurrency.controller_for).
        capped = {"max_concurrency": self.max_concurrency} if self.max_concurrency else {}
        return Endpoint(
            **capped, api_key_env=self.api_key_env,
            max_tokens=self.max_tokens, timeout_s=self.timeout_s, max_retries=self.max_retries,
            backoff_base_s=self.backoff_base_s, backoff_max_s=self.backoff_max_s,
            retry_after_max_s=self.retry_after_max_s, announce_wait_s=self.announce_wait_s,
            # 0: the client's default cap, derived from max_tokens.
            max_reply_chars=self.max_reply_chars or None)

    def settings(self) -> ClientSettings:
        """Settings for the fixed endpoint ``base_url`` / ``model``."""
        if not self.base_url or not self.model:
            raise ValueError("VLMClientResource: set both base_url and model to build a client "
                             "for one endpoint, or use open(name) for a declared model")
        endpoint = self.defaults().model_copy(update={"base_url": self.base_url,
                                                      "model": self.model})
        return ClientSettings(endpoint=endpoint, temperature=self.temperature)

    def client(self) -> OpenAIVLMClient:
        """A client for the fixed endpoint (close it when done)."""
        return OpenAIVLMClient(self.settings())

    def prompt_controls(self) -> PromptControls:
        """This resource's prompt controls: those of every model whose entry does not set its
        own (:meth:`ModelSpec.prompt_controls`)."""
        return PromptControls(
            templates=self.templates, repeats=self.repeats,
            repeat_temperature=self.repeat_temperature, structured=self.structured,
            prompt_control_cases=self.prompt_control_cases)

    def model_spec(self, name: str) -> ModelSpec:
        """The declared model called ``name`` (the models file is read in one place)."""
        return declared_model(name)

    @contextlib.contextmanager
    def open(self, name: str, requery: str | None = None) -> Iterator[OpenAIVLMClient]:
        """A client for the declared model ``name``, its local server running meanwhile.

        ``requery`` (the night of a nightly run) asks again even what is stored.
        """
        with open_model(self.model_spec(name), self.defaults(), temperature=self.temperature,
                        requery=requery) as client:
            yield client


class ScoringResource(ConfigurableResource):
    """How descriptions are scored: annotations folder, sentence embedder, hallucination threshold.

    The default embedder is the reference ``all-mpnet-base-v2`` (installed offline by setup);
    ``all-MiniLM-L6-v2`` is the fast option.
    """

    annotations_dir: str = ""
    embedder: str = "all-mpnet-base-v2"
    hallucination_threshold: float = Field(default=0.75, ge=0.0, le=1.0)
    max_parse_failure_rate: float = Field(
        default=0.2, ge=0.0, le=1.0, description="above it the parse-failure check warns")

    def annotations_path(self) -> Path:
        """Where ``<recording>.jsonl`` human annotations are read from."""
        return Path(self.annotations_dir).resolve() if self.annotations_dir \
            else default_annotations_dir()

    def scorer(self) -> SimilarityScorer:
        """Cosine similarity over the configured sentence embedder (models cached per process)."""
        return CosineSimilarity(SentenceTransformerEmbedder(self.embedder))


class JudgeResource(ConfigurableResource):
    """The LLM judge, configured by a YAML file (default ``data/judge.yaml``).

    The file is read by :meth:`JudgeConfig.from_yaml`, the loader ``eval-assets score judge``
    uses too; ``serve: NAME`` starts that local model in-process instead of calling ``base_url``.
    A judge that is one of the declared models under test is flagged ``self_judging``.
    """

    config_file: str = ""

    def config_path(self) -> Path:
        """The judge YAML in use."""
        return Path(self.config_file).resolve() if self.config_file else default_judge_file()

    def load_config(self) -> JudgeConfig:
        """The validated judge config (``JudgeConfigError`` names the file, field and fix)."""
        return JudgeConfig.from_yaml(self.config_path())

    def self_judging_models(self, config: JudgeConfig) -> list[str]:
        """The models under test that are the judge itself (none when there is no models file)."""
        return self_judging_models(config, list(declared_models()))

    @contextlib.contextmanager
    def judge(self) -> Iterator[tuple[JudgeConfig, OpenAIJudge]]:
        """The judge settings and client, its local server running meanwhile if ``serve`` is set.

        A served local model needs no key; any other endpoint reads the key from the variable
        named by ``api_key_env``. The settings yielded carry the URL actually called.
        """
        with open_judge(self.load_config()) as client:
            yield client.config, client
