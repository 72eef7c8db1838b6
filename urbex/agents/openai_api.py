"""The ``openai`` policy: any OpenAI-compatible ``/v1/chat/completions`` endpoint with tools and images.

Works with hosted APIs and with a local vLLM server (``vllm serve ... --enable-auto-tool-choice``).
Requests go through the official ``openai`` client (``client.chat.completions.create``). The
episode's conversation (chat format of :mod:`urbex.env.policy`) is sent as OpenAI messages
(:mod:`urbex.agents.openai_messages`):

* images become ``image_url`` parts holding base64 data URLs (PNG by default);
* an assistant turn holding exactly one ``<tool_call>{...}</tool_call>`` whose next message is
  the environment's ``tool`` message becomes a proper ``tool_calls`` entry, and that response an
  OpenAI ``tool`` message (followed by a user message carrying the tool's images, since tool
  messages hold text only); a call nothing answers (a re-ask of the workflow wrapper) stays
  assistant text, and the environment's answer to a turn that called no tool (an invalid turn)
  is sent as a user message;
* the tools are :func:`urbex.env.tools.openai_tool_schemas` plus an ``answer`` function.

The reply is turned back into the text protocol the environment parses: a function call becomes
``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (``answer`` becomes
``<answer>{...}</answer>``), otherwise the message text is returned as is. The reply's JSON is
read as the server sent it (``with_raw_response``), so the shapes vLLM and others send beside
OpenAI's (parsed arguments, ``reasoning_content``) reach the conversion unchanged.

The API key is read from the environment variable *named* in ``params.openai.api_key_env`` at
each request (surrounding whitespace stripped) and sent as that request's ``Authorization``
header; it is never stored on the object, logged, or put in an error message (a server that
echoes it gets it masked in the error text).

**Retries and the deadline.** ``openai.timeout_s`` is ONE total deadline per request, retries
and backoff sleeps included. The client cannot express that: its ``timeout`` is per attempt
and, like httpx's, per network operation (a server trickling bytes keeps every read alive), and
its ``max_retries`` multiply it (``timeout=30, max_retries=2`` waits 90 s on a silent server,
openai/openai-python#3828); its backoff sleeps cannot be bounded or injected either. So the
client is built with ``max_retries=0`` and this module keeps a small loop around it: each
attempt gets ``timeout=`` the time left and runs in a daemon thread the caller waits for no
longer than that; a retryable failure (the client's rule: ``x-should-retry`` when the server
sends it, else 408, 409, 429 and 5xx; timeouts and dropped connections) sleeps
``backoff_s · 2**attempt`` or the server's ``Retry-After`` / ``retry-after-ms`` (at most 60 s),
unless that sleep would end past the deadline.

**Episodes in flight** (``params.openai.concurrency``, :attr:`OpenAIPolicy.max_concurrency`):
one instance is shared by the runner's worker threads, one episode per thread at a time. What
belongs to an episode — its seed, its deadline — is thread-local, so each thread's requests,
retries and backoff sleeps (a 429 included) are its own and never stall another thread's; the
one ``openai.OpenAI`` client (a thread-safe connection pool) is shared. The request counters
are updated under a lock. (One shared instance rather than one per thread: a policy handed in
ready-made, ``evaluate(policy_obj=...)``, and the ``workflow``/``no_tools`` wrappers around it
then work unchanged.)
"""

from __future__ import annotations

import email.utils
import math
import os
import threading
import time
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from urbex.agents.openai_messages import from_openai_message, image_data_url, to_openai_messages
from urbex.env.policy import PolicyBase
from urbex.env.tools import openai_tool_schemas
from urbex.errors import ConfigError, PolicyError, PolicyTimeoutError
from urbex.tool_vocabulary import ToolName

if TYPE_CHECKING:
    import httpx2
    import openai
    from PIL import Image

    from urbex.config import OpenAIParams

__all__ = ["OpenAIPolicy"]

#: Longest sleep between two attempts, seconds (exponential backoff and Retry-After alike).
_MAX_DELAY_S = 60.0
#: Data URLs kept per episode in flight (:meth:`OpenAIPolicy._data_url`): its images, and more.
_URL_CACHE = 32


class OpenAIPolicy(PolicyBase):
    """A prompted model behind an OpenAI-compatible chat endpoint.

    Parameters
    ----------
    base_url
        Up to and including ``/v1`` (``{base_url}/chat/completions`` is called).
    model
        Model name sent in each request.
    api_key_env
        NAME of the environment variable holding the key, read at every request; None for
        keyless endpoints (a local vLLM server).
    timeout_s, max_retries, backoff_s
        One total deadline per :meth:`act`, seconds: connect, write, read, every retry and
        every backoff sleep together never take longer than ``timeout_s``, whatever the
        server does (a server that accepts and never answers, or trickles bytes, included).
        At most ``max_retries`` retries (see the module docstring, "Retries and the
        deadline"); a retry whose sleep would end past the deadline is not made. The
        episode's deadline (:meth:`begin_episode`) bounds a request too: one that cannot
        finish before it raises :class:`~urbex.errors.PolicyTimeoutError`.
    max_tokens, temperature, image_format
        Generation settings and the data-URL image format.
    tool_names
        Tools offered to the model (default: all three, plus ``answer``).
    sleep
        Injected for tests (default ``time.sleep``).
    concurrency
        :attr:`max_concurrency`: how many threads may play episodes through this instance at
        once (``params.openai.concurrency``; the runner keeps that many episodes in flight).
    """

    #: The chat template does not list tools here (the request's ``tools`` does); the runner
    #: keeps the schemas in the system prompt too, harmless for API models.
    template_lists_tools = False

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout_s: float = 120.0,
        max_retries: int = 4,
        backoff_s: float = 1.0,
        max_tokens: int = 1024,
        temperature: float = 0.0,
        image_format: str = "png",
        tool_names: tuple[str, ...] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        concurrency: int = 1,
        marks: bool = False,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url: expected an http(s) URL, got {base_url!r}")
        if concurrency < 1:
            raise ValueError(f"concurrency: expected >= 1, got {concurrency}")
        if max_retries < 0 or timeout_s <= 0:
            raise ValueError(
                f"max_retries >= 0 and timeout_s > 0 expected, got {max_retries}, {timeout_s}"
            )
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/chat/completions"
        self.model = model
        self.api_key_env = api_key_env
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_s = float(backoff_s)
        self.max_tokens = int(max_tokens)
        self.temperature = float(temperature)
        self.image_format = image_format
        self.tool_names = tool_names
        self.marks = bool(marks)
        self.max_concurrency = int(concurrency)
        self._sleep = sleep
        self._local = threading.local()  # per thread: seed, deadline
        self._lock = threading.Lock()  # counters, the client, the data URLs
        self._client: openai.OpenAI | None = None
        self._urls: OrderedDict[int, tuple[weakref.ref[Image.Image], str]] = OrderedDict()
        self._dead_urls: deque[int] = deque()  # ids of images gone since the last purge
        self.n_requests = 0
        self.n_retries = 0

    @property
    def seed(self) -> int | None:
        """This thread's episode seed (sent with each request), or None before an episode."""
        return getattr(self._local, "seed", None)

    @property
    def deadline(self) -> float | None:
        """This thread's episode deadline (:func:`time.monotonic` instant, s), or None."""
        return getattr(self._local, "deadline", None)

    def _data_url(self, image: Image.Image) -> str:
        """:func:`image_data_url`, cached for the images still alive, shared by the threads.

        Each turn resends the whole conversation; without the cache every earlier image (the
        global view, at every turn) is encoded again, and the episodes in flight share each
        scene's global view (:meth:`urbex.env.episode.GroundingEnv.sibling`): encoded once,
        not once per thread. Keyed by object identity, checked through a weak reference (a
        new image at a reused address is encoded afresh); an image's entry goes when the
        image does, and at most :data:`_URL_CACHE` entries per episode in flight are kept.
        Two threads missing the same image at once may both encode it (the same URL); the
        encoding runs outside the lock.
        """
        key = id(image)
        with self._lock:
            self._purge_urls()
            hit = self._urls.get(key)
            if hit is not None and hit[0]() is image:
                self._urls.move_to_end(key)
                return hit[1]
        url = image_data_url(image, fmt=self.image_format)
        dead = self._dead_urls
        ref = weakref.ref(image, lambda _r: dead.append(key))  # append only: GC-safe
        with self._lock:
            self._urls[key] = (ref, url)
            self._urls.move_to_end(key)
            while len(self._urls) > _URL_CACHE * self.max_concurrency:
                self._urls.popitem(last=False)
        return url

    def _purge_urls(self) -> None:
        """Drop the data URLs of images that died (under :attr:`_lock`)."""
        while self._dead_urls:
            key = self._dead_urls.popleft()
            hit = self._urls.get(key)
            if hit is not None and hit[0]() is None:
                del self._urls[key]

    def _count(self, *, requests: int = 0, retries: int = 0) -> None:
        with self._lock:
            self.n_requests += requests
            self.n_retries += retries

    @classmethod
    def from_params(cls, p: OpenAIParams, **overrides: Any) -> OpenAIPolicy:
        """From the ``openai`` params section; ``overrides`` (``marks``, ``tool_names``, ...) go
        to the constructor as they are."""

        kw: dict[str, Any] = {
            "base_url": p.base_url,
            "model": p.model,
            "api_key_env": p.api_key_env,
            "timeout_s": p.timeout_s,
            "max_retries": p.max_retries,
            "backoff_s": p.backoff_s,
            "max_tokens": p.max_tokens,
            "temperature": p.temperature,
            "image_format": p.image_format,
            "concurrency": p.concurrency,
        }
        kw.update(overrides)
        return cls(**kw)

    def __repr__(self) -> str:
        return f"OpenAIPolicy(url={self.url!r}, model={self.model!r}, api_key_env={self.api_key_env!r})"

    def begin_episode(self, *, seed: int, deadline: float | None = None) -> None:
        """Set the seed sent with the episode's requests (servers that honour ``seed``) and the
        episode's deadline (:func:`time.monotonic` instant, seconds; None = none) no request
        waits past — for the calling thread's episode (see the module docstring)."""
        self._local.seed = int(seed)
        self._local.deadline = None if deadline is None else float(deadline)

    def close(self) -> None:
        """Close the client's connection pool (the next request opens a new one)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def _openai_client(self) -> openai.OpenAI:
        """The shared client, made at the first request: ``max_retries=0``, the retries are
        this class's (module docstring). The key travels per request (:meth:`_auth`), so the
        client's own ``api_key`` is a placeholder it never sends."""
        with self._lock:
            if self._client is None:
                self._client = _openai().OpenAI(
                    base_url=self.base_url,
                    api_key="unused",
                    max_retries=0,
                    timeout=self.timeout_s,
                )
            return self._client

    def _auth(self) -> dict[str, Any]:
        """The request's ``Authorization`` header (omitted for a keyless endpoint)."""
        if not self.api_key_env:
            return {"Authorization": _openai().Omit()}
        key = (os.environ.get(self.api_key_env) or "").strip()
        if not key:
            raise ConfigError(
                f"environment variable {self.api_key_env} is not set; export the API key there, "
                "or set openai.api_key_env: null for a keyless endpoint",
                field="openai.api_key_env",
            )
        if not all("!" <= c <= "~" for c in key):  # the value itself is never shown
            raise ConfigError(
                f"environment variable {self.api_key_env} holds characters an HTTP header "
                "cannot carry (non-ASCII, whitespace or control characters inside the key); "
                "check how it was exported",
                field="openai.api_key_env",
            )
        return {"Authorization": f"Bearer {key}"}

    def _redact(self, text: str) -> str:
        """``text`` (a server's reply) with the API key, should the server echo it, masked."""
        key = (os.environ.get(self.api_key_env) or "").strip() if self.api_key_env else ""
        return text.replace(key, "[REDACTED]") if len(key) >= 4 else text

    def _tools(self) -> list[dict[str, Any]]:

        tools = openai_tool_schemas(include_answer=True, marks=self.marks)
        if self.tool_names is not None:
            keep = {*self.tool_names, ToolName.ANSWER}
            tools = [t for t in tools if t["function"]["name"] in keep]
        return tools

    def request_body(
        self, messages: list[dict[str, Any]], images: list[Image.Image]
    ) -> dict[str, Any]:
        """The JSON body of the chat-completions request for this turn (the keyword arguments
        of ``client.chat.completions.create``)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai_messages(
                messages, images, image_format=self.image_format, data_url=self._data_url
            ),
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
        }
        tools = self._tools()
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        if self.seed is not None:
            body["seed"] = self.seed
        return body

    def act(self, messages: list[dict[str, Any]], images: list[Image.Image]) -> str:
        """One assistant turn: send the conversation, return the reply in the text protocol.

        Raises
        ------
        PolicyTimeoutError
            No reply before the episode's deadline (:meth:`begin_episode`).
        PolicyError
            A non-retryable HTTP status, a malformed reply, every retry failed, or no reply
            within ``timeout_s`` in total; the message names the URL called.
        ConfigError
            The key's environment variable is not set.
        """
        reply = self._post(self.request_body(messages, images))
        try:
            message = reply["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            message = None
        if not isinstance(message, dict):
            raise PolicyError(
                f"{self.url}: reply has no choices[0].message object "
                f"({self._redact(str(reply)[:200])})"
            )
        return from_openai_message(message)

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        """Send ``body`` with retries, all within one deadline (the module docstring)."""
        t_start = time.monotonic()
        end = t_start + self.timeout_s
        by_episode = self.deadline is not None and self.deadline <= end
        if by_episode:
            assert self.deadline is not None
            end = self.deadline
        headers = self._auth()
        last = "none (no time was left for an attempt)"
        attempts = 0
        while (remaining := end - time.monotonic()) > 0:
            attempts += 1
            self._count(requests=1)
            delay = min(self.backoff_s * 2 ** (attempts - 1), _MAX_DELAY_S)
            try:
                return self._json(self._attempt(body, headers, remaining))
            except _Retryable as exc:
                last = str(exc)
                if exc.retry_after is not None:
                    delay = min(exc.retry_after, _MAX_DELAY_S)
            if attempts > self.max_retries:
                raise PolicyError(
                    f"{self.url}: failed after {attempts} attempts; last error: {last}"
                )
            if time.monotonic() + delay >= end:
                break  # the retry could not start before the deadline
            self._count(retries=1)
            self._sleep(delay)  # this thread only: the other episodes in flight go on
        spent = time.monotonic() - t_start
        if by_episode:
            raise PolicyTimeoutError(
                f"{self.url}: no reply before the episode's deadline "
                f"(eval.episode_timeout_s; {spent:.1f} s spent on {_n_attempts(attempts)}); "
                f"last error: {last}"
            )
        raise PolicyError(
            f"{self.url}: no reply within openai.timeout_s = {self.timeout_s:g} s in total "
            f"({_n_attempts(attempts)}, backoff included); last error: {last} — raise "
            "openai.timeout_s for a slow server, or check that it answers"
        )

    def _json(self, r: httpx2.Response) -> dict[str, Any]:
        """The JSON object of a successful reply."""
        try:
            data = r.json()
        except ValueError:
            raise PolicyError(
                f"{self.url}: reply is not JSON ({self._redact(r.text[:200])!r})"
            ) from None  # the decode error's .doc holds the whole reply
        except RecursionError:  # json's parser recurses once per level of nesting
            raise PolicyError(
                f"{self.url}: reply is nested too deeply to read ({self._redact(r.text[:80])!r}...)"
            ) from None
        if not isinstance(data, dict):
            raise PolicyError(
                f"{self.url}: reply is not a JSON object ({self._redact(r.text[:200])!r})"
            )
        return data

    def _attempt(
        self, body: dict[str, Any], headers: dict[str, Any], timeout_s: float
    ) -> httpx2.Response:
        """One ``create`` call that returns or fails within ``timeout_s`` seconds of wall time.

        The client's timeouts bound each network operation, not their sum, so the call runs in
        a daemon thread this one waits for at most ``timeout_s``. A thread left behind ends by
        itself (its own timeouts: ``timeout_s`` per operation) and its connection goes back to
        the pool; its reply, if any, is dropped.

        Raises
        ------
        _Retryable
            A failure worth a retry: a timeout (of the client or of the wait), a dropped
            connection, or a retryable HTTP status (with the server's Retry-After).
        PolicyError
            Any other HTTP status.
        """
        oa = _openai()
        client = self._openai_client()
        out: dict[str, Any] = {}

        def call() -> None:
            try:
                out["reply"] = client.chat.completions.with_raw_response.create(
                    **body, extra_headers=headers, timeout=timeout_s
                ).http_response
            except BaseException as exc:  # handed to the waiting thread below
                out["error"] = exc

        worker = threading.Thread(target=call, name="urbex-openai-request", daemon=True)
        worker.start()
        worker.join(timeout_s)
        if worker.is_alive():
            raise _Retryable(f"no reply within {timeout_s:.1f} s (Timeout of the whole attempt)")
        error = out.get("error")
        if isinstance(error, oa.APIStatusError):
            r = error.response
            detail = self._redact(r.text[:300])
            if _should_retry(r.status_code, r.headers):
                raise _Retryable(f"HTTP {r.status_code}: {detail}", _retry_after(r.headers))
            hint = f" (check the key in ${self.api_key_env})" if r.status_code in (401, 403) else ""
            raise PolicyError(f"{self.url}: HTTP {r.status_code}{hint}: {detail}")
        if isinstance(error, oa.APIConnectionError):  # APITimeoutError included
            cause = error.__cause__
            raise _Retryable(type(error).__name__ + (f" ({type(cause).__name__})" if cause else ""))
        if error is not None:
            raise error
        reply: httpx2.Response = out["reply"]
        return reply


def _openai() -> Any:
    """The ``openai`` module, imported at the first request: a deferred heavy import (~0.7 s),
    so that importing :mod:`urbex.agents` (every CLI start) does not pay for it."""
    import openai

    return openai


def _should_retry(status: int, headers: Mapping[str, str]) -> bool:
    """The openai client's retry rule for a status (its ``BaseClient._should_retry``, private
    there): the server's ``x-should-retry: true|false`` if sent, else 408, 409, 429 and 5xx."""
    flag = headers.get("x-should-retry")
    if flag in ("true", "false"):
        return flag == "true"
    return status in (408, 409, 429) or status >= 500


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asks to wait, >= 0, or None: ``retry-after-ms``, else ``Retry-After``
    as seconds or as an HTTP date (the headers the openai client reads).

    >>> _retry_after({"retry-after-ms": "250", "retry-after": "9"}), _retry_after({"retry-after": "2"})
    (0.25, 2.0)
    >>> _retry_after({"retry-after": "soon"}) is None, _retry_after({})
    (True, None)
    """
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        try:
            seconds = float(headers.get(name, "")) * scale
        except ValueError:
            continue
        if math.isfinite(seconds):
            return max(seconds, 0.0)
    date = email.utils.parsedate_tz(headers.get("retry-after", ""))
    return None if date is None else max(email.utils.mktime_tz(date) - time.time(), 0.0)


def _n_attempts(n: int) -> str:
    return f"{n} attempt" if n == 1 else f"{n} attempts"


class _Retryable(Exception):
    """One attempt of :meth:`OpenAIPolicy._post` failed in a way worth a retry (module only)."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
