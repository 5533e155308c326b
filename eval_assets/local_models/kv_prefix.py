"""KV-cache plumbing of the SmolLM2 baseline: shared prompt prefixes and forced decoding.

:class:`PrefixStore` keeps the KV caches of recent prompts so a new prompt starts from the one it
shares most tokens with; :class:`ForcedPrefix` feeds a prompt once and then scores candidates or
generates strings by extending and cropping its cache (the structured-output engine).
"""

from __future__ import annotations

import copy
from typing import Any, Protocol


class CausalLM(Protocol):
    """What :class:`ForcedPrefix` needs of the model that owns it (:class:`BlindSmolLM2`)."""

    @property
    def _torch(self) -> Any: ...
    @property
    def _tokenizer(self) -> Any: ...
    @property
    def _model(self) -> Any: ...
    @property
    def _kv_cache_class(self) -> Any: ...
    @property
    def _cache_arg(self) -> str: ...
    @property
    def _keep_arg(self) -> str | None: ...


class PrefixStore:
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


class Sampler:
    """Draws from softmax(scores / temperature) with its own seeded ``torch.Generator``.

    Its own generator, not torch's global one, so concurrent requests (or any other torch user
    of the process) cannot change a request's draws: the same seed, the same reply.
    """

    def __init__(self, torch: Any, temperature: float, seed: int) -> None:
        if temperature <= 0:
            raise ValueError(f"a Sampler samples: temperature must be above 0, not {temperature}")
        self._torch = torch
        self.temperature = temperature
        self._generator = torch.Generator().manual_seed(seed)

    def pick(self, scores: Any) -> int:
        """An index drawn with probability softmax(``scores`` / temperature); ``scores`` is a
        1-D tensor or a list of floats (log-probabilities, or any logits)."""
        torch = self._torch
        values = torch.as_tensor(scores, dtype=torch.float64) / self.temperature
        probs = torch.softmax(values, -1)
        return int(torch.multinomial(probs, 1, generator=self._generator))


def choose(scores: list[float], sampler: Sampler | None) -> int:
    """The best of ``scores`` (ties: the first), or the index ``sampler`` draws from them."""
    if sampler is not None:
        return sampler.pick(scores)
    return max(range(len(scores)), key=lambda j: (scores[j], -j))


class ForcedPrefix:
    """The chat prompt plus the text written so far, fed through the model once, with its KV cache.

    Scoring a candidate or generating a string extends the cache and then crops it back, so each
    step costs its own few tokens rather than another pass over the whole prompt. ``start`` is a
    KV cache of the first tokens of ``prompt_ids`` and their number (see :class:`PrefixStore`):
    only the rest is fed.
    """

    def __init__(self, owner: CausalLM, prompt_ids: list[int],
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

    def generate(self, limit: int, stop: str, sampler: Sampler | None = None) -> str:
        """Greedy text after the prefix (or each token drawn by ``sampler``): at most ``limit``
        tokens, cut before any ``stop`` char.

        Ends early at a special token (end of turn). The prefix is unchanged.
        """
        generated: list[int] = []
        text = ""
        logprobs = self._next
        for _ in range(limit):
            token = (int(self._torch.argmax(logprobs)) if sampler is None
                     else sampler.pick(logprobs))
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
