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


DRAFT_TOKENS = 3
"""Tokens proposed per verifying pass by :func:`lookup_draft`. On CPU a pass over 4 tokens costs
about 1.3 passes over one (every weight is read once either way; wider passes turn compute-bound):
on the demo's 25 free-text prompts 3 gave 0.79 of generate()'s CPU side by side; 6 gave about
0.83 (separate runs on a loaded machine)."""


def lookup_draft(context: list[int], sources: list[list[int]], limit: int,
                 longest: int = 3) -> list[int]:
    """Up to ``limit`` tokens that followed the last tokens of ``context`` the last time they
    occurred (prompt lookup): in ``context`` itself, else in ``sources`` (most recent first).

    The longest suffix of ``context`` (``longest`` tokens down to 1) found wins; [] if none is.
    Only a guess: :meth:`ForcedPrefix.greedy` keeps the tokens the model itself picks.
    """
    if limit <= 0:
        return []
    for n in range(min(longest, len(context)), 0, -1):
        tail = context[-n:]
        for source in (context, *sources):
            # The latest occurrence that has a continuation (in context: not the tail itself).
            end = len(source) - (1 if source is context else 0)
            for start in range(end - n, -1, -1):
                if source[start:start + n] == tail and start + n < len(source):
                    return source[start + n:start + n + limit]
    return []


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
        self._last_logits: Any = None  # its raw logits (what greedy decoding takes the argmax of)
        self._fed = list(prompt_ids)  # the prefix's tokens (drafts are looked up in them)
        self._feed_ids(prompt_ids[self.length:])

    @property
    def kv(self) -> Any:
        """The KV cache of the prefix (nothing scored or generated is left in it)."""
        return self._kv

    def _forward(self, ids: list[int], last_only: bool = False) -> Any:
        """Log-probs of the next token at each position of ``ids`` (or the last), cache extended."""
        return self._torch.log_softmax(self._logits(ids, last_only), -1)

    def _logits(self, ids: list[int], last_only: bool = False) -> Any:
        """Raw logits of the next token at each position of ``ids`` (or the last), cache
        extended."""
        owner = self._owner
        kwargs: dict[str, Any] = {owner._cache_arg: self._kv, "use_cache": True}
        if last_only and owner._keep_arg:
            # The prompt is ~1.4k tokens: full logits over a 49k vocabulary would be ~270 MB.
            kwargs[owner._keep_arg] = 1
        logits = owner._model(self._torch.tensor([ids]), **kwargs).logits[0].float()
        return logits[-1:] if last_only else logits

    def ids(self, text: str) -> list[int]:
        """``text`` tokenized on its own, without special tokens."""
        return list(self._tokenizer(text, add_special_tokens=False)["input_ids"])

    def _feed_ids(self, ids: list[int]) -> None:
        if ids:
            logits = self._logits(ids, last_only=True)
            self._last_logits = logits[-1]
            self._next = self._torch.log_softmax(logits, -1)[-1]
            self.length += len(ids)

    def _rewind(self) -> None:
        """Drop what scoring or generating added after the prefix from the KV cache."""
        # A negative count: transformers 5 accepts nothing else, 4.x reads it the same way.
        added = self._kv.get_seq_length() - self.length
        if added > 0:
            self._kv.crop(-added)

    def feed(self, text: str) -> None:
        """Append ``text`` to the prefix."""
        ids = self.ids(text)
        self._fed += ids
        self._feed_ids(ids)

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

    def greedy(self, limit: int, eos: set[int], sources: list[list[int]]) -> list[int]:
        """Greedy tokens after the prefix, as ``generate(do_sample=False)`` picks them: the
        argmax of the raw logits, up to and including an ``eos`` token, at most ``limit``. The
        prefix is unchanged.

        Each pass feeds the token just picked and a draft of the next ones (:func:`lookup_draft`
        over the prefix, the tokens so far and ``sources``) and keeps the draft's tokens while
        each is the argmax after the one before: the same tokens, in fewer passes when the reply
        repeats its prompt or an earlier reply. A pass over several tokens rounds differently
        from one over a single token (logits agree to about 1e-4), as :meth:`score_many` does.
        """
        torch = self._torch
        if self._last_logits is None:
            raise ValueError("greedy() needs a prefix of at least one token")
        prompt = self._fed
        logits = self._last_logits
        out: list[int] = []
        while True:
            token = int(torch.argmax(logits))
            out.append(token)
            if token in eos or len(out) >= limit:
                break
            draft = lookup_draft(prompt + out, sources, min(DRAFT_TOKENS, limit - len(out)))
            raw = self._logits([token, *draft])
            kept = 0
            for j, guess in enumerate(draft):
                if int(torch.argmax(raw[j])) != guess:
                    break
                out.append(guess)
                kept += 1
                if guess in eos or len(out) >= limit:
                    break
            if out[-1] in eos or len(out) >= limit:
                break
            if kept < len(draft):  # drop what the model did not pick from the cache
                self._kv.crop(-(len(draft) - kept))
            logits = raw[kept]
        self._rewind()
        return out
