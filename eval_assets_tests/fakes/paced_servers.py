"""OpenAI-compatible servers on 127.0.0.1 that limit load the ways real ones do, over real HTTP.

- :class:`TokenBucketServer`: allows ``rate`` requests/s (a bucket of ``burst``); above it, 429
  with ``retry-after`` / ``retry-after-ms`` and ``x-ratelimit-*`` headers (as OpenAI sends them:
  limit, remaining, and the time until the bucket is full again); every reply carries them.
- :class:`SlotServer`: ``slots`` requests are served at once, each taking ``service_s``; the rest
  wait their turn, never refused (LM Studio, vLLM under load).
- :class:`FixedLatencyServer`: every request answered after ``latency_s``, no limit.

Each answers ``POST /v1/chat/completions`` with the content ``"A"`` and counts what it did
(``served``, ``refused``, and each reply's latency as the server saw it).
"""

from __future__ import annotations

import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_REPLY = json.dumps({
    "id": "c", "object": "chat.completion", "created": 0, "model": "paced",
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
                body = _REPLY if status == 200 else json.dumps(
                    {"error": {"message": "rate limited", "type": "rate_limit"}}).encode()
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

    def __enter__(self) -> PacedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


class TokenBucketServer(PacedServer):
    """``rate`` requests/s with bursts of ``burst``; 429 with pacing headers above it."""

    def __init__(self, rate: float, burst: int, latency_s: float = 0.05,
                 headers: bool = True) -> None:
        super().__init__()
        self.rate, self.burst, self.latency_s, self.headers = rate, burst, latency_s, headers
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
            tokens = self._tokens
        headers: dict[str, str] = {}
        if self.headers:
            headers = {"x-ratelimit-limit-requests": str(self.burst),
                       "x-ratelimit-remaining-requests": str(math.floor(tokens)),
                       "x-ratelimit-reset-requests": f"{(self.burst - tokens) / self.rate:.3f}s"}
        if not allowed:
            wait = (1 - tokens) / self.rate
            headers.update({"retry-after": str(math.ceil(wait)),
                            "retry-after-ms": str(max(1, round(wait * 1000)))})
            return 429, headers
        time.sleep(self.latency_s)
        return 200, headers


class SlotServer(PacedServer):
    """``slots`` requests at once, ``service_s`` each; the rest queue (first come, first served)."""

    def __init__(self, slots: int, service_s: float) -> None:
        super().__init__()
        self.slots, self.service_s = slots, service_s
        self._free = threading.Semaphore(slots)

    def handle(self) -> tuple[int, dict[str, str]]:
        with self._free:
            time.sleep(self.service_s)
        with self.lock:
            self.served += 1
        return 200, {}


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
