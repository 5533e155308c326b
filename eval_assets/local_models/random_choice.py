"""The chance-level baseline: a seeded random pick among each prompt's choices."""

from __future__ import annotations

import json
import random
from functools import lru_cache
from importlib import resources
from typing import Any

from eval_assets.hashing import canonical_json, text_sha256
from eval_assets.local_models.base import LocalReply, sampling_seed
from eval_assets.local_models.response_format import JsonSchemaFormat, parse_response_format
from eval_assets.schemas.chat import Message, text_of
from eval_assets.schemas.vqa_prompt import parse_choices, parse_lettered


@lru_cache(maxsize=1)
def _coco_categories() -> tuple[str, ...]:
    # The canonical MSCOCO names (first entry of each line) are the random describer's vocabulary.
    text = resources.files("eval_assets").joinpath("data", "coco_synonyms.txt").read_text("utf-8")
    return tuple(line.split(",")[0].strip() for line in text.splitlines() if line.strip())


NUMBER_RANGE = (0.0, 10.0)
"""Where a schema's number has no ``minimum`` / ``maximum``, the random value is drawn from here."""


class RandomChoiceModel:
    """Picks one of the prompt's choices at random: the chance level, reproducibly.

    The generator is seeded by ``(seed, the whole request's messages)``, images included, so the
    same case always gets the same reply while two frames asking the same question do not share
    one. A prompt whose choices are lettered (``Options:`` then ``A) ...`` lines) gets a random
    letter. A prompt without either (the description task) gets a random sentence naming MSCOCO
    objects. Token counts are whitespace-separated words, not model tokens.

    With a ``json_schema`` response format the reply is a schema-valid object of uniformly random
    values (a chance-level judge): integers and enums drawn from their values, booleans from
    true/false, numbers uniform over their bounds (:data:`NUMBER_RANGE` where the schema gives
    none) to two decimals, strings are random MSCOCO sentences cut to the per-string word
    budget. The format
    joins the seed, so the free-text replies of requests without one are unchanged.

    At a ``temperature`` above 0 the request's ``seed`` parameter joins the generator's seed too
    (:func:`~eval_assets.local_models.base.sampling_seed`), so sampling repeats that send distinct
    seeds get independent uniform picks, and a repeat with the same seed the same one. The picks
    stay uniform whatever the temperature (chance has no logits to sharpen or flatten). At
    temperature 0 the seed is ignored and every reply is the one it always was.
    """

    def __init__(self, seed: int = 0, name: str = "random") -> None:
        self.seed = seed
        self.name = name

    def _rng(self, messages: list[Message], response_format: dict[str, Any] | None = None,
             sample_seed: int | None = None) -> random.Random:
        request: Any = messages if response_format is None else [messages, response_format]
        if sample_seed is not None:  # sampling: the request's seed joins (see the class doc)
            return random.Random(sampling_seed(sample_seed, [self.seed, request]))
        # The first 8 bytes of the digest (16 hex digits), big-endian, seed the generator.
        digest = text_sha256(f"{self.seed}\n{canonical_json(request)}")
        return random.Random(int(digest[:16], 16))

    def complete(self, messages: list[Message], max_tokens: int,
                 response_format: dict[str, Any] | None = None, *,
                 temperature: float = 0.0, seed: int | None = None) -> LocalReply:
        """A uniformly random choice, a random two-object sentence, or random schema values;
        drawn with the request's ``seed`` at a ``temperature`` above 0."""
        schema = parse_response_format(response_format)
        # A sampled request without a seed is seeded as seed 0 would be: a fixture stays
        # reproducible (OpenAI's would not).
        sample_seed = (seed or 0) if temperature > 0 else None
        rng = self._rng(messages, None if schema is None else response_format, sample_seed)
        prompt = text_of(messages)
        if schema is not None:
            text = self._random_object(schema, rng, max_tokens)
            return LocalReply(text=text, prompt_tokens=len(prompt.split()),
                              completion_tokens=len(text.split()))
        choices = parse_choices(prompt)
        lettered = parse_lettered(prompt) if choices is None else None
        if choices is not None:
            text = rng.choice(choices)
        elif lettered is not None:  # lettered options are answered by letter
            text = rng.choice(lettered)[0]
        else:
            text = self._sentence(rng)
        words = text.split()[:max_tokens]
        return LocalReply(text=" ".join(words), prompt_tokens=len(prompt.split()),
                          completion_tokens=len(words))

    @staticmethod
    def _sentence(rng: random.Random) -> str:
        first, second = rng.sample(_coco_categories(), 2)
        return f"I see a {first} and a {second}."

    def _random_object(self, schema: JsonSchemaFormat, rng: random.Random,
                       max_tokens: int) -> str:
        words = schema.string_tokens(max_tokens)
        parts = []
        for spec in schema.fields:
            if spec.kind == "string":
                value = json.dumps(" ".join(self._sentence(rng).split()[:words]),
                                   ensure_ascii=False)
            elif spec.kind == "number":
                low, high = spec.bounds
                low = NUMBER_RANGE[0] if low is None else low
                high = max(low, low + NUMBER_RANGE[1] if high is None else high)
                value = json.dumps(min(high, max(low, round(rng.uniform(low, high), 2))))
            else:
                value = rng.choice(spec.literals)
            parts.append(f"{json.dumps(spec.name, ensure_ascii=False)}: {value}")
        return "{" + ", ".join(parts) + "}"
