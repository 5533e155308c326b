"""What every local model is: something that replies to an OpenAI-style message list.

``eval-assets serve`` (:mod:`eval_assets.local_models.server`) puts a :class:`LocalModel` behind
``/v1/chat/completions``; the models are in :mod:`eval_assets.local_models.registry`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from eval_assets.hashing import canonical_json, text_sha256
from eval_assets.schemas.chat import Message

MAX_TEMPERATURE = 2.0
"""The largest ``temperature`` the server takes (OpenAI's range is [0, 2])."""


def sampling_seed(seed: int | None, content: Any, bits: int = 60) -> int:
    """A generator seed from the request's ``seed`` parameter (None: absent) and ``content``.

    Both join it so the same request with the same seed samples the same reply, another seed
    (or another request) another draw. 60 bits of the SHA-256: within what
    ``torch.Generator.manual_seed`` and :class:`random.Random` take.
    """
    digest = text_sha256(f"{seed}\n{canonical_json(content)}")
    return int(digest, 16) >> (256 - bits)


@dataclass(frozen=True)
class LocalReply:
    """A local model's reply and its token counts."""

    text: str
    prompt_tokens: int
    completion_tokens: int


class LocalModel(Protocol):
    """A model ``eval-assets serve`` can put behind ``/v1/chat/completions``."""

    name: str

    def complete(self, messages: list[Message], max_tokens: int,
                 response_format: dict[str, Any] | None = None, *,
                 temperature: float = 0.0, seed: int | None = None) -> LocalReply:
        """Reply to an OpenAI-style message list, as JSON matching ``response_format`` if set.

        ``temperature`` 0 is the model's deterministic reply (greedy, or seeded by the request);
        above 0 the reply is sampled, reproducibly for the same request and ``seed``.
        Raises :class:`UnsupportedResponseFormat` for a format the model cannot honour.
        """
        ...
