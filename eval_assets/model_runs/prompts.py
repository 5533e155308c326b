"""The exact prompts sent to a model under test (dimOS 0.0.15 runner wording) and their parsing.

Changing any text here changes answers, so it must come with a new ``PROMPT_VERSION``: the version
is part of the generation config hash, which keeps stale stored answers from being reused.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

from eval_assets.hashing import text_sha256
from eval_assets.schemas.chat import Message
from eval_assets.schemas.vqa_prompt import question_text

PROMPT_VERSION = "dimos-0.0.15-vqa+describe-v1"
SYSTEM_PROMPT = "Answer the question using only the provided observations."
DESCRIPTION_PROMPT = "Describe what you observe in this frame."


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


def text_messages(png: bytes, text: str) -> list[Message]:
    """System prompt, then the image followed by ``text`` (a case in another template)."""
    return _messages(png, text)


def description_messages(png: bytes) -> list[Message]:
    """The free-text description task for one frame, with the same system prompt."""
    return _messages(png, DESCRIPTION_PROMPT)


def _fingerprint(image_sha256: str, text: str) -> str:
    # Everything _messages() sends, with the image by its hash: equal fingerprints mean the model
    # saw byte-identical requests (apart from the generation config, hashed separately). Not the
    # canonical JSON (this one has json.dumps' spaces and keeps non-ASCII as is): stored records
    # carry these fingerprints, so the recipe stays as it was made.
    document = json.dumps({"system": SYSTEM_PROMPT, "image_sha256": image_sha256, "text": text},
                          sort_keys=True, ensure_ascii=False)
    return text_sha256(document)


def vqa_content_sha256(image_sha256: str, question: str, choices: list[str]) -> str:
    """Identity of the model-facing content of a VQA case: prompt, question, choices, image."""
    return _fingerprint(image_sha256, question_text(question, choices))


def text_content_sha256(image_sha256: str, text: str) -> str:
    """Identity of the model-facing content of :func:`text_messages`: prompt, text, image (for
    the record template the same as :func:`vqa_content_sha256`)."""
    return _fingerprint(image_sha256, text)


def description_content_sha256(image_sha256: str) -> str:
    """Identity of the model-facing content of a description request: prompt and image."""
    return _fingerprint(image_sha256, DESCRIPTION_PROMPT)


def read_png(path: Path) -> bytes:
    """Bytes of a PNG asset, rejecting anything that is not one (a wrong path in cases.jsonl)."""
    data = path.read_bytes()
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        raise ValueError(f"{path}: not a PNG file; public dataset images must be PNGs in assets/")
    return data
