"""Question authors: who proposes *which* objects and families to ask about, never the answers.

An author sees only the rectified image (and its frame index, for reproducible choices). Two
strategies ship:

- :class:`VocabularyAuthor` (offline, deterministic): proposes from a configured vocabulary,
  including names absent from the frame, so ``presence`` gets real "no" answers.
- :class:`VLMAuthor`: asks any OpenAI-compatible endpoint (through the one chat client,
  :mod:`eval_assets.openai_chat`, with requests built and replies read by the one request
  builder, :class:`eval_assets.chat_request.RequestBuilder`: the endpoint's token-limit parameter
  and think tags hold here as for the models and the judge), sending the image only, for JSON
  proposals. A malformed reply
  (or item) becomes a proposal carrying an ``error`` that the decider rejects and the audit keeps;
  a failed call becomes an ``author_call_failed`` proposal whose ``error_detail`` starts with the
  chat client's failure category (``reply_too_large: ...``). Neither aborts the run.

Authors are built from :class:`AuthorConfig` through the ``AUTHORS`` registry.
"""

from __future__ import annotations

import base64
import json
import logging
import random
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import cv2
import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from eval_assets.chat_request import RequestBuilder
from eval_assets.openai_chat import chat_client
from eval_assets.schemas.chat import ChatResult
from eval_assets.schemas.endpoint import ENDPOINT_FIELDS, Endpoint, EndpointError
from eval_assets.schemas.vqa import Proposal
from eval_assets.synth.scene import PALETTE, SHAPES
from eval_assets.vqa.declarations import family_names
from eval_assets.vqa.families import MAX_REFERENCES, MIN_REFERENCES, FamilyRule, rule_of

# The sample scene's colour and shape words, in the perception default's order; six of these
# eighteen names are in the scene, the rest give presence questions whose true answer is "no".
DEFAULT_VOCABULARY: tuple[str, ...] = tuple(
    f"{colour} {shape}" for colour in PALETTE for shape in SHAPES)

log = logging.getLogger(__name__)


class AuthorConfigError(ValueError):
    """An author cannot be built from its configuration; the message names the field and fix."""


class AuthorConfig(BaseModel):
    """How to build a question author (recorded verbatim in ``audit/run.json``)."""

    # An invalid api_key_env (a pasted key) is never repeated by the error (see Endpoint).
    model_config = ConfigDict(frozen=True, extra="forbid", hide_input_in_errors=True)

    author: Literal["vocabulary", "vlm"] = "vocabulary"
    vocabulary: list[str] = Field(default_factory=lambda: list(DEFAULT_VOCABULARY))
    families: list[str] = Field(default_factory=lambda: list(family_names("dimos")))
    seed: int = 0
    max_names_per_family: int = Field(
        default=0, ge=0, description="single-object proposals per family and frame; 0 = all names")
    max_groups_per_family: int = Field(
        default=20, ge=0, description="multi-reference proposals per family and frame")
    max_group_size: int = Field(default=3, ge=MIN_REFERENCES, le=MAX_REFERENCES)
    max_proposals_per_frame: int = Field(
        default=200, ge=1, description="proposals kept per frame; the rest are rejected")
    vlm: Endpoint = Field(
        default_factory=Endpoint, description="the vlm author's endpoint; its fields may be "
        "written flat with a vlm_ prefix (vlm_base_url, vlm_model, vlm_api_key_env, ...)")

    @model_validator(mode="before")
    @classmethod
    def _flat_vlm_fields(cls, data: Any) -> Any:
        """``vlm_<field>`` keys are the fields of the ``vlm`` endpoint."""
        if not isinstance(data, Mapping):
            return data
        prefixed = {key: value for key, value in data.items()
                    if key.startswith("vlm_") and key.removeprefix("vlm_") in ENDPOINT_FIELDS}
        if not prefixed:
            return data
        rest = {key: value for key, value in data.items() if key not in prefixed}
        nested = rest.get("vlm")
        fields: dict[str, Any] = (
            dict(nested) if isinstance(nested, Mapping)
            else nested.model_dump(exclude_unset=True) if isinstance(nested, Endpoint) else {})
        fields.update({key.removeprefix("vlm_"): value for key, value in prefixed.items()})
        return {**rest, "vlm": fields}


@runtime_checkable
class QuestionAuthor(Protocol):
    """Proposes questions for one frame from its image alone."""

    name: str
    needs_image: bool
    """False for an author that never looks at the image: it is then not decoded (None)."""

    def propose(self, image: np.ndarray | None, frame_index: int) -> list[Proposal]:
        """Proposals for one rectified RGB frame, ``ordinal`` numbered from 0 in a stable order."""
        ...


def _check_families(families: Sequence[str] | None, field: str) -> list[str]:
    """``families`` (default: every declared single-image family), or an error naming the
    unknown ones and the choices."""
    if families is None:
        return list(family_names("dimos"))
    unknown = [f for f in families if rule_of(f) is None]
    if unknown:
        raise AuthorConfigError(f"{field} contains unknown families {unknown}; choose from "
                                f"{list(family_names('dimos'))}")
    return list(families)


def _rule(name: str) -> FamilyRule:
    rule = rule_of(name)
    assert rule is not None, f"family {name!r} passed _check_families"
    return rule


class VocabularyAuthor:
    """Deterministic offline author: every family over names drawn from a fixed vocabulary.

    Single-object families ask about every vocabulary name (or ``max_names_per_family`` drawn
    per frame); ``closest_object`` and ``largest_visible_area`` get ``max_groups_per_family``
    groups of 2..``max_group_size`` distinct names. Draws use a generator seeded from
    ``(seed, frame_index)`` only, so reruns propose exactly the same questions.
    """

    name = "vocabulary"
    needs_image = False

    def __init__(self, vocabulary: Sequence[str], families: Sequence[str] | None = None,
                 seed: int = 0, max_names_per_family: int = 0, max_groups_per_family: int = 20,
                 max_group_size: int = 3) -> None:
        names = [" ".join(n.split()) for n in vocabulary]
        if not names or any(not n for n in names):
            raise AuthorConfigError(
                "vocabulary must list at least one non-empty object name; set "
                "QuestionAuthorResource.vocabulary (or --vocabulary)")
        if len({n.lower() for n in names}) != len(names):
            raise AuthorConfigError(f"vocabulary {names} repeats a name; list each name once")
        self.vocabulary = names
        self.families = _check_families(families, "families")
        self.seed = seed
        self.max_names_per_family = max_names_per_family
        self.max_groups_per_family = max_groups_per_family
        self.max_group_size = max_group_size

    def propose(self, image: np.ndarray | None, frame_index: int) -> list[Proposal]:
        """Proposals for one frame; the image is not needed to pick names from a vocabulary."""
        rng = random.Random(f"vocabulary-author:{self.seed}:{frame_index}")
        items: list[tuple[str, list[str]]] = []
        for family_name in self.families:
            family = _rule(family_name)
            if family.max_names == 1:
                k = self.max_names_per_family or len(self.vocabulary)
                chosen = (self.vocabulary if k >= len(self.vocabulary)
                          else rng.sample(self.vocabulary, k))
                items.extend((family_name, [n]) for n in chosen)
                continue
            top = min(self.max_group_size, family.max_names, len(self.vocabulary))
            if top < family.min_names:
                continue
            for _ in range(self.max_groups_per_family):
                size = rng.randint(family.min_names, top)
                items.append((family_name, rng.sample(self.vocabulary, size)))
        return [Proposal(frame_index=frame_index, ordinal=i, family=f, object_names=names,
                         author=self.name)
                for i, (f, names) in enumerate(items)]


AUTHOR_SYSTEM_PROMPT = (
    "You write multiple-choice questions about a robot's camera image. You only choose which "
    "objects to ask about; you never answer."
)


def author_user_prompt(families: Sequence[str], max_proposals: int) -> str:
    """The text sent after the image: the families, their reference counts and the JSON shape."""
    lines = []
    for name in families:
        family = _rule(name)
        count = ("exactly 1 object name" if family.max_names == 1
                 else f"{family.min_names} to {family.max_names} object names (references such "
                      "as 'left chair', 'right chair' tell repeated objects apart)")
        lines.append(f"- {name}: {count}")
    return (
        "Propose questions about the objects in this image. Families:\n" + "\n".join(lines)
        + f"\nPropose at most {max_proposals} questions. Include some objects that are NOT in the "
        "image for the presence family. Reply with JSON only, in this shape: "
        '{"proposals": [{"family": "<family>", "object_names": ["<object name>", ...]}]}'
    )


def image_data_url(image: np.ndarray) -> str:
    """A ``data:image/png;base64,...`` URL of an RGB ``uint8`` image."""
    bgr = cv2.cvtColor(np.ascontiguousarray(image), cv2.COLOR_RGB2BGR)
    ok, buf = cv2.imencode(".png", bgr, [cv2.IMWRITE_PNG_COMPRESSION, 3])
    if not ok:
        raise ValueError(f"PNG encoding failed for an image of shape {image.shape}")
    return "data:image/png;base64," + base64.b64encode(buf.tobytes()).decode("ascii")


_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def parse_author_reply(text: str | None) -> tuple[list[Any] | None, str | None]:
    """The list of proposal items in a reply, or ``(None, why)`` when the reply is malformed.

    Accepts ``{"proposals": [...]}`` or a bare list, optionally inside a ```json fence.
    """
    if text is None or not text.strip():
        return None, "the reply is empty"
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1)
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        return None, f"the reply is not JSON ({exc.msg} at position {exc.pos})"
    if isinstance(data, dict):
        data = data.get("proposals")
    if not isinstance(data, list):
        return None, 'the reply has no "proposals" list'
    return data, None


def _excerpt(text: object, limit: int = 300) -> str:
    s = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False, default=str)
    return s if len(s) <= limit else s[:limit] + "…"


def proposals_from_items(items: Sequence[Any], frame_index: int, author: str) -> list[Proposal]:
    """Turn parsed reply items into proposals; an unusable item becomes an error proposal."""
    out: list[Proposal] = []
    for ordinal, item in enumerate(items):
        family = item.get("family") if isinstance(item, dict) else None
        names = item.get("object_names") if isinstance(item, dict) else None
        common = {"frame_index": frame_index, "ordinal": ordinal, "author": author}
        if (not isinstance(family, str) or not isinstance(names, list)
              or not all(isinstance(n, str) for n in names)):
            out.append(Proposal(
                **common, family=family if isinstance(family, str) else "", object_names=[],
                error="malformed_author_reply",
                error_detail=("an item needs a string 'family' and a list of strings "
                              f"'object_names': {_excerpt(item)}")))
        else:
            out.append(Proposal(**common, family=family, object_names=list(names)))
    return out


class VLMAuthor:
    """Asks an OpenAI-compatible chat endpoint to propose questions from the image alone.

    Every call's :class:`~eval_assets.schemas.chat.ChatResult` (tokens, latency, attempts, failure
    category) is kept in :attr:`calls` by frame index, and logged.
    """

    needs_image = True

    def __init__(self, endpoint: Endpoint, api_key: str | None = None,
                 families: Sequence[str] | None = None,
                 max_proposals_per_frame: int = 40) -> None:
        if not endpoint.base_url:
            raise AuthorConfigError(
                "the vlm author needs vlm_base_url (an OpenAI-compatible endpoint such as "
                "http://127.0.0.1:8000/v1)")
        if not endpoint.model:
            raise AuthorConfigError("the vlm author needs vlm_model (the served model's name)")
        self.name = f"vlm:{endpoint.model}"
        self.model = endpoint.model
        self.families = _check_families(families, "families")
        self.max_proposals_per_frame = max_proposals_per_frame
        # No token limit is sent unless the endpoint sets max_tokens itself (its default, 256,
        # would cut a list of 40 proposals short), so the reply cap is the chat client's default
        # for 4,096 tokens unless the endpoint sets max_reply_chars / max_reply_bytes.
        self.max_tokens = endpoint.max_tokens if "max_tokens" in endpoint.model_fields_set else None
        self.client = chat_client(endpoint, api_key or "")
        self.requests = RequestBuilder(endpoint, temperature=0.0)
        self.calls: dict[int, ChatResult] = {}
        self._calls_lock = threading.Lock()

    def close(self) -> None:
        """Close the HTTP connections."""
        self.client.close()

    def propose(self, image: np.ndarray | None, frame_index: int) -> list[Proposal]:
        """One chat call per frame; failures and malformed replies become error proposals."""
        if image is None:
            raise ValueError("the vlm author needs the frame's image (needs_image is True)")
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": AUTHOR_SYSTEM_PROMPT},
            {"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": image_data_url(image)}},
                {"type": "text",
                 "text": author_user_prompt(self.families, self.max_proposals_per_frame)},
            ]},
        ]
        base = {"frame_index": frame_index, "ordinal": 0, "family": "", "object_names": [],
                "author": self.name}
        result = self.requests.send(
            self.client, self.requests.request(messages, max_tokens=self.max_tokens),
            label=f"author frame {frame_index}")
        with self._calls_lock:
            self.calls[frame_index] = result
        usage = result.usage
        log.debug("author %s, frame %d: %s in %.2f s (%d attempts), %s tokens", self.name,
                  frame_index, result.error_category or "reply", result.wall_s, result.attempts,
                  usage.total_tokens if usage is not None else "unreported")
        if not result.ok and result.error_category != "empty_response":
            return [Proposal(**base, error="author_call_failed",
                             error_detail=f"{result.error_category}: "
                                          f"{_excerpt(result.error_message or '')}")]
        # Think tags out, or the reply's own reasoning_content when the content is empty.
        reply = self.requests.read(result)
        if reply.answer_field:
            log.info("author %s, frame %d: the reply came only in %s; read from there",
                     self.name, frame_index, reply.answer_field)
        text = reply.text
        if reply.outcome == "truncated" and not (text or "").strip():
            return [Proposal(**base, error="malformed_author_reply",
                             error_detail="the reply was cut off while thinking (an unclosed "
                                          "think tag or finish_reason length, no text after it); "
                                          "raise vlm_max_tokens or leave it unset")]
        items, why = parse_author_reply(text)
        if items is None:
            return [Proposal(**base, error="malformed_author_reply",
                             error_detail=f"{why}: {_excerpt(text or '')}")]
        return proposals_from_items(items, frame_index, self.name)


def _vocabulary_author(config: AuthorConfig) -> QuestionAuthor:
    return VocabularyAuthor(config.vocabulary, config.families, config.seed,
                            config.max_names_per_family, config.max_groups_per_family,
                            config.max_group_size)


def _vlm_author(config: AuthorConfig) -> QuestionAuthor:
    api_key = None
    if config.vlm.api_key_env:
        try:
            api_key = config.vlm.api_key()
        except EndpointError:
            raise AuthorConfigError(
                f"vlm_api_key_env names ${config.vlm.api_key_env}, which is unset or empty; "
                "export it, or set vlm_api_key_env to '' for an endpoint without keys") from None
    return VLMAuthor(config.vlm, api_key, config.families, config.max_proposals_per_frame)


AUTHORS: dict[str, Callable[[AuthorConfig], QuestionAuthor]] = {
    "vocabulary": _vocabulary_author,
    "vlm": _vlm_author,
}


def build_author(config: AuthorConfig) -> QuestionAuthor:
    """The author named by ``config.author``, built from the rest of the config."""
    return AUTHORS[config.author](config)
