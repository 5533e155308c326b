"""The exact prompts sent to a model under test (dimOS 0.0.15 runner wording) and their parsing.

Changing any text here changes answers, so it must come with a new ``PROMPT_VERSION``: the version
is part of the generation config hash, which keeps stale stored answers from being reused.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

PROMPT_VERSION = "dimos-0.0.15-vqa+describe-v1"
SYSTEM_PROMPT = "Answer the question using only the provided observations."
DESCRIPTION_PROMPT = "Describe what you observe in this frame."
_CHOICES_PREFIX = "\nChoices: "
_ANSWER_SUFFIX = "\nAnswer with exactly one choice."

Message = dict[str, Any]


def question_text(question: str, choices: list[str]) -> str:
    """The user text of a VQA case, exactly as the dimOS runner builds it."""
    return f"{question}{_CHOICES_PREFIX}{json.dumps(choices)}{_ANSWER_SUFFIX}"


def image_data_url(png: bytes) -> str:
    """A PNG as a base64 ``data:`` URL, the form OpenAI-compatible APIs accept inline."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _messages(png: bytes, text: str) -> list[Message]:
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": image_data_url(png)}},
                {"type": "text", "text": text},
            ],
        },
    ]


def vqa_messages(png: bytes, question: str, choices: list[str]) -> list[Message]:
    """System prompt, then the image followed by the question text: nothing else."""
    return _messages(png, question_text(question, choices))


def description_messages(png: bytes) -> list[Message]:
    """The free-text description task for one frame, with the same system prompt."""
    return _messages(png, DESCRIPTION_PROMPT)


def _fingerprint(image_sha256: str, text: str) -> str:
    # Everything _messages() sends, with the image by its hash: equal fingerprints mean the model
    # saw byte-identical requests (apart from the generation config, hashed separately).
    document = json.dumps({"system": SYSTEM_PROMPT, "image_sha256": image_sha256, "text": text},
                          sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(document.encode("utf-8")).hexdigest()


def vqa_content_sha256(image_sha256: str, question: str, choices: list[str]) -> str:
    """Identity of the model-facing content of a VQA case: prompt, question, choices, image."""
    return _fingerprint(image_sha256, question_text(question, choices))


def description_content_sha256(image_sha256: str) -> str:
    """Identity of the model-facing content of a description request: prompt and image."""
    return _fingerprint(image_sha256, DESCRIPTION_PROMPT)


def read_png(path: Path) -> bytes:
    """Bytes of a PNG asset, rejecting anything that is not one (a wrong path in cases.jsonl)."""
    data = path.read_bytes()
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        raise ValueError(f"{path}: not a PNG file; public dataset images must be PNGs in assets/")
    return data


def text_of(messages: list[Message]) -> str:
    """The text a text-only model sees: every text part of every message, images dropped."""
    parts: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content
                         if isinstance(p, dict) and p.get("type") == "text")
    return "\n".join(parts)


def parse_choices(text: str) -> list[str] | None:
    """The choices list of a VQA prompt text, or ``None`` when the text holds none.

    Reads the last ``Choices: [...]`` line, the one :func:`question_text` writes.
    """
    start = text.rfind(_CHOICES_PREFIX)
    if start < 0:
        return None
    line = text[start + len(_CHOICES_PREFIX):].split("\n", 1)[0]
    try:
        value = json.loads(line)
    except json.JSONDecodeError:
        return None
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return value
    return None
