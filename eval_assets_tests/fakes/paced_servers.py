"""OpenAI-compatible servers on 127.0.0.1 that limit load the ways real ones do, over real HTTP.

- :class:`TokenBucketServer`: allows ``rate`` requests/s (a bucket of ``burst``); above it, 429
  with ``retry-after`` / ``retry-after-ms`` and ``x-ratelimit-*`` headers (as OpenAI sends them:
  limit, remaining, and the time until the bucket is full again); every reply carries them.
- :class:`SlotServer`: ``slots`` requests are served at once, each taking ``service_s``; the rest
  wait their turn, never refused (LM Studio, vLLM under load).
- :class:`FixedLatencyServer`: every request answered after ``latency_s``, no limit.
- :class:`FlakySlotServer`: a :class:`SlotServer` that answers a share of requests at once with
  a 5xx and ``Retry-After`` (a gateway failing whatever the load).

A :class:`TokenBucketServer` can also refuse the ways careless limiters do: ``Retry-After: 0``,
a garbled ``Retry-After``, no header at all, or every other 429 with and without it.
- :class:`FixedWindowServer`: ``per_window`` requests per calendar window of ``window_s`` (LiteLLM's
  proxy's requests-per-minute): ``x-ratelimit-limit-requests`` and ``-remaining-requests``
  without a reset time, and 429s without ``Retry-After``.

Each answers ``POST /v1/chat/completions`` with the content ``"A"`` and counts what it did
(``served``, ``refused``, ``failed``), and logs each reply (:attr:`PacedServer.log`: when it was
sent, its status, and the seconds it waited for a slot), the figures a benchmark reads.
"""

from __future__ import annotations

import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

# No "model": the server's word would name another model than the one each test declares.
_REPLY = json.dumps({
    "id": "c", "object": "chat.completion", "created": 0,
    "choices": [{"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": "A"}}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512


class PacedServer:
    """Base: a threaded HTTP server; subclasses decide each request's fate in :meth:`handle`."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.served = 0
        self.refused = 0
        self.failed = 0
        self.log: list[tuple[float, int, float]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes: with Nagle's algorithm the body would wait
            # for the client's delayed ACK (40 ms), a latency no real server adds.
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                self.rfile.read(length)
                status, headers = owner.handle()
                with owner.lock:
                    owner.log.append((time.monotonic(), status, owner.waited()))
                body = _REPLY if status == 200 else json.dumps(
                    {"error": {"message": "rate limited" if status == 429 else "unavailable",
                               "type": "rate_limit" if status == 429 else "server"}}).encode()
                self.send_response(status)
                for key, value in {**headers, "content-type": "application/json",
                                   "content-length": str(len(body))}.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def handle(self) -> tuple[int, dict[str, str]]:
        """The status and headers of one request (after any wait)."""
        raise NotImplementedError

    def waited(self) -> float:
        """Seconds the request just handled (this thread's) waited for a slot; 0 here."""
        return 0.0

    def answers_per_s(self) -> float:
        """200s per second, from the first request the server saw to its last 200."""
        with self.lock:
            served = [t for t, status, _ in self.log if status == 200]
            first = self.log[0][0] if self.log else 0.0
        return len(served) / (served[-1] - first) if len(served) > 1 else 0.0

    def share(self, status: int) -> float:
        """The share of replies with ``status``."""
        with self.lock:
            return sum(s == status for _, s, _ in self.log) / max(1, len(self.log))

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


class TokenBucketServer(PacedServer):
    """``rate`` requests/s with bursts of ``burst``; 429 with pacing headers above it."""

    def __init__(self, rate: float, burst: int, latency_s: float = 0.05,
                 headers: bool = True, retry_after: str = "exact") -> None:
        """``retry_after``: ``"exact"`` (the wait, in ``retry-after`` and ``retry-after-ms``),
        ``"zero"`` (``Retry-After: 0``), ``"garbage"`` (``Retry-After: soon``), ``"none"``, or
        ``"alternate"`` (every other 429 exact, the others none)."""
        super().__init__()
        if retry_after not in ("exact", "zero", "garbage", "none", "alternate"):
            raise ValueError(f"retry_after is {retry_after!r}; use exact, zero, garbage, none or "
                             "alternate")
        self.rate, self.burst, self.latency_s, self.headers = rate, burst, latency_s, headers
        self.retry_after = retry_after
        self._tokens = float(burst)
        self._stamp = time.monotonic()

    def handle(self) -> tuple[int, dict[str, str]]:
        with self.lock:
            now = time.monotonic()
            self._tokens = min(float(self.burst), self._tokens + (now - self._stamp) * self.rate)
            self._stamp = now
            allowed = self._tokens >= 1
            if allowed:
                self._tokens -= 1
                self.served += 1
            else:
                self.refused += 1
            tokens, refused = self._tokens, self.refused
        headers: dict[str, str] = {}
        if self.headers:
            headers = {"x-ratelimit-limit-requests": str(self.burst),
                       "x-ratelimit-remaining-requests": str(math.floor(tokens)),
                       "x-ratelimit-reset-requests": f"{(self.burst - tokens) / self.rate:.3f}s"}
        if not allowed:
            wait = (1 - tokens) / self.rate
            kind = self.retry_after
            if kind == "alternate":
                kind = "exact" if refused % 2 else "none"
            if kind == "exact":
                headers.update({"retry-after": str(math.ceil(wait)),
                                "retry-after-ms": str(max(1, round(wait * 1000)))})
            elif kind != "none":
                headers["retry-after"] = "0" if kind == "zero" else "soon"
            return 429, headers
        time.sleep(self.latency_s)
        return 200, headers


class FixedWindowServer(PacedServer):
    """``per_window`` requests per calendar window of ``window_s`` seconds (``time.time() //
    window_s``), as LiteLLM's proxy counts requests per minute: each reply says the limit and
    what remains of the window, never when it resets (``headers=False``: nothing at all); a 429
    carries no ``Retry-After``."""

    def __init__(self, per_window: int, window_s: float = 60.0, latency_s: float = 0.05,
                 headers: bool = True) -> None:
        super().__init__()
        self.per_window, self.window_s, self.latency_s = per_window, window_s, latency_s
        self.headers = headers
        self._window = -1
        self._used = 0
        self.most_in_a_window = 0

    def handle(self) -> tuple[int, dict[str, str]]:
        with self.lock:
            window = int(time.time() // self.window_s)
            if window != self._window:
                self._window, self._used = window, 0
            allowed = self._used < self.per_window
            if allowed:
                self._used += 1
                self.served += 1
                self.most_in_a_window = max(self.most_in_a_window, self._used)
            else:
                self.refused += 1
            headers = {"x-ratelimit-limit-requests": str(self.per_window),
                       "x-ratelimit-remaining-requests": str(self.per_window - self._used)
                       } if self.headers else {}
        if not allowed:
            return 429, headers
        time.sleep(self.latency_s)
        return 200, headers


class SlotServer(PacedServer):
    """``slots`` requests at once, ``service_s`` each; the rest queue (first come, first served)."""

    def __init__(self, slots: int, service_s: float) -> None:
        super().__init__()
        self.slots, self.service_s = slots, service_s
        self._free = threading.Semaphore(slots)
        self._waits = threading.local()

    def handle(self) -> tuple[int, dict[str, str]]:
        arrived = time.monotonic()
        with self._free:
            self._waits.value = time.monotonic() - arrived
            time.sleep(self.service_s)
        with self.lock:
            self.served += 1
        return 200, {}

    def waited(self) -> float:
        """Seconds this thread's request queued for a slot."""
        return float(getattr(self._waits, "value", 0.0))


class FlakySlotServer(SlotServer):
    """A :class:`SlotServer` answering every ``1 / error_share``-th request (spread evenly,
    whatever the load) at once with ``status`` and ``Retry-After: retry_after``."""

    def __init__(self, slots: int, service_s: float, error_share: float = 0.3,
                 status: int = 503, retry_after: str = "2") -> None:
        super().__init__(slots, service_s)
        if not 0 <= error_share < 1:
            raise ValueError(f"error_share is {error_share}; it must be in [0, 1)")
        self.error_share, self.status, self.retry_after = error_share, status, retry_after
        self._arrivals = 0

    def handle(self) -> tuple[int, dict[str, str]]:
        with self.lock:
            self._arrivals += 1
            # Bresenham: the k-th arrival fails when the running count of failures due steps up.
            fail = (math.floor(self._arrivals * self.error_share)
                    > math.floor((self._arrivals - 1) * self.error_share))
            if fail:
                self.failed += 1
        if fail:
            self._waits.value = 0.0
            return self.status, {"retry-after": self.retry_after}
        return super().handle()


class FixedLatencyServer(PacedServer):
    """Every request answered after ``latency_s``; no limit."""

    def __init__(self, latency_s: float) -> None:
        super().__init__()
        self.latency_s = latency_s

    def handle(self) -> tuple[int, dict[str, str]]:
        time.sleep(self.latency_s)
        with self.lock:
            self.served += 1
        return 200, {}
