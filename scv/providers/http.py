"""The HTTP side shared by both OpenAI wire APIs: a streamed POST with bounded retries, whose
failures become one ProviderError sentence naming the provider, and the body as SSE events."""

import contextlib
import os
import select
import socket
import threading
import time
from typing import Any, Callable, Iterator

import msgspec

from scv.core.cancellation import Cancellation
from scv.providers.answer import Answer
from scv.providers.base import Provider, ProviderError, TurnCancelled
from scv.providers.connection import Connection, RequestFailed, Timeout
from scv.providers.retry import RetryPolicy, parse_retry_after, retryable
from scv.providers.sse import SSEDecoder, SSEError, SSEEvent

ERROR_TEXT_LIMIT = 300


def _error_text(response: Answer) -> tuple[str, str]:
    """(message, code) from an error body: OpenAI's and Anthropic's {"error": {...}} or plain
    text, bounded."""
    try:
        body = response.read(65536)
    except OSError:
        return "", ""
    try:
        data = msgspec.json.decode(body)
    except ValueError:
        return body.decode("utf-8", "replace").strip()[:ERROR_TEXT_LIMIT], ""
    error = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(error, dict):
        message = str(error.get("message") or error.get("detail") or "")
        code = str(error.get("code") or error.get("type") or "")
    else:
        message, code = str(error), ""
    return message[:ERROR_TEXT_LIMIT], code


def _looks_like_unknown_model(status: int, message: str, code: str) -> bool:
    if code in ("model_not_found", "invalid_model"):
        return True
    text = message.lower()
    return status in (400, 404) and "model" in text and any(
        phrase in text for phrase in ("not found", "does not exist", "unknown", "not exist", "invalid model",
                                      "no such", "not available", "not supported"))


def _sleep(seconds: float, cancel: Cancellation) -> None:
    """Waits, but wakes at once when the turn is cancelled."""
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        if cancel.cancelled:
            raise TurnCancelled("the turn was cancelled")
        if left <= 0:
            return
        select.select([cancel.fileno()], [], [], left)


class StreamingClient:
    def __init__(self, provider: str, model: str, url: str, headers: dict[str, str], timeout: float,
                 policy: RetryPolicy = RetryPolicy()):
        self.provider = provider
        self.model = model
        self.url = url
        self.headers = headers
        self.timeout = timeout
        self.policy = policy
        self.http = Connection(url, min(30.0, timeout), timeout)
        self.on_sent: Callable[[], None] | None = None      # called once, when the first request is written

    def _sent(self) -> None:
        callback, self.on_sent = self.on_sent, None
        if callback is not None:
            callback()

    def post(self, body: dict[str, Any], cancel: Cancellation) -> Answer:
        """The response of a successful request, its body not yet read."""
        attempt = 0
        while True:
            attempt += 1
            if cancel.cancelled:
                raise TurnCancelled("the turn was cancelled")
            try:
                response = self.http.post(body, self.headers, sent=self._sent)
            except Timeout:
                problem, retry_after = f"did not answer within {self.timeout:g} s", None
            except RequestFailed as exc:
                problem, retry_after = f"could not be reached at {self.url} ({exc})", None
            else:
                if response.status < 400:
                    return response
                problem, retry_after = self._judge(response)
            delay = self.policy.delay(attempt, retry_after)
            if delay is None:
                tries = f" after {attempt} attempts" if attempt > 1 else ""
                raise ProviderError(f"provider {self.provider} {problem}{tries}; try again later or check "
                                    f"providers.{self.provider}")
            _sleep(delay, cancel)

    def _judge(self, response: Answer) -> tuple[str, float | None]:
        """A retryable failure's description and Retry-After; raises for the others."""
        status = response.status
        message, code = _error_text(response)
        self.http.finish(response)
        said = f": {message}" if message else ""
        if status in (401, 403):
            raise ProviderError(f"provider {self.provider} refused the credentials (HTTP {status}{said}); check "
                                f"providers.{self.provider}.api_key or api_key_env")
        if _looks_like_unknown_model(status, message, code):
            raise ProviderError(f"provider {self.provider} does not know the model {self.model!r} (HTTP {status}"
                                f"{said}); set providers.{self.provider}.model or pass --model")
        if retryable(status):
            retry_after = parse_retry_after(response.headers.get("Retry-After"))
            if retry_after is not None and retry_after > self.policy.max_retry_after:
                raise ProviderError(f"provider {self.provider} asked to wait {retry_after:.0f} s before trying again "
                                    f"(HTTP {status}{said}); try again later")
            return f"answered HTTP {status}{said}", retry_after
        raise ProviderError(f"provider {self.provider} refused the request (HTTP {status}{said}); check "
                            f"providers.{self.provider}")

    def events(self, response: Answer, cancel: Cancellation) -> Iterator[SSEEvent]:
        """The body's events until it ends; a connection that breaks is a dropped stream."""
        decoder = SSEDecoder()
        watcher = _AbortOnCancel(self.http.socket(), cancel)
        broken = False
        try:
            while chunk := response.read1(65536):
                if cancel.cancelled:
                    raise TurnCancelled("the turn was cancelled")
                yield from decoder.feed(chunk)
            yield from decoder.close()
            if cancel.cancelled:
                raise TurnCancelled("the turn was cancelled")
        except OSError as exc:
            broken = True
            if cancel.cancelled:
                raise TurnCancelled("the turn was cancelled") from None
            raise self.dropped(f"{type(exc).__name__}") from None
        except SSEError as exc:
            broken = True
            raise ProviderError(f"provider {self.provider} sent a stream SCV cannot read ({exc})") from None
        finally:
            watcher.stop()
            # A provider stops reading at its stream's last event (response.completed, [DONE],
            # message_stop): the stream's end is read too, so the next request reuses the connection.
            self.http.finish(response, drain=not broken and not cancel.cancelled)

    def dropped(self, why: str) -> ProviderError:
        return ProviderError(f"provider {self.provider}'s stream ended before the reply was complete ({why}); "
                             "the turn stopped, try again")

    @contextlib.contextmanager
    def reading(self, event: SSEEvent) -> Iterator[None]:
        """Folding one event into the reply: an event of an unexpected shape (a list where an
        object belongs, a count that is not a number) is the provider's failure, in one sentence."""
        try:
            yield
        except (AttributeError, TypeError, ValueError, KeyError, IndexError) as exc:
            raise ProviderError(f"provider {self.provider} sent an event SCV cannot read ({type(exc).__name__}: "
                                f"{event.data[:120]!r})") from None

    def decode(self, event: SSEEvent) -> dict[str, Any]:
        try:
            data = msgspec.json.decode(event.data)
        except ValueError:
            raise ProviderError(f"provider {self.provider} sent an event that is not JSON: "
                                f"{event.data[:120]!r}") from None
        if not isinstance(data, dict):
            raise ProviderError(f"provider {self.provider} sent an event that is not a JSON object")
        return data


class _AbortOnCancel:
    """While a stream is read, a small thread waits for the turn's cancellation and then shuts
    the connection's socket down, so a read blocked on a silent model returns at once."""

    def __init__(self, sock: socket.socket | None, cancel: Cancellation):
        self._sock = sock
        self._cancel = cancel
        self._done_r, self._done_w = os.pipe2(os.O_CLOEXEC)
        self._thread = threading.Thread(target=self._watch, name="scv-stream-cancel", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        ready, _, _ = select.select([self._cancel.fileno(), self._done_r], [], [])
        if self._done_r in ready:
            return
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def stop(self) -> None:
        os.write(self._done_w, b"x")
        self._thread.join()
        os.close(self._done_r)
        os.close(self._done_w)


class EndpointProvider(Provider):
    """An OpenAI-compatible endpoint reached through a StreamingClient; the subclass speaks its
    wire API."""

    def __init__(self, name: str, model: str, client: StreamingClient):
        self.name = name
        self.model = model
        self.client = client

    def when_sent(self, callback: Callable[[], None]) -> None:
        self.client.on_sent = callback
