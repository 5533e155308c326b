"""What every local model is: something that replies to an OpenAI-style message list.

``eval-assets serve`` (:mod:`eval_assets.local_models.server`) puts a :class:`LocalModel` behind
``/v1/chat/completions``; the models are in :mod:`eval_assets.local_models.registry`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from eval_assets.schemas.chat import Message


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
                 response_format: dict[str, Any] | None = None) -> LocalReply:
        """Reply to an OpenAI-style message list, as JSON matching ``response_format`` if set.

        Raises :class:`UnsupportedResponseFormat` for a format the model cannot honour.
        """
        ...
