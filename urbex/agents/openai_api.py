"""The ``openai`` policy: any OpenAI-compatible ``/v1/chat/completions`` endpoint with tools and images.

Works with hosted APIs and with a local vLLM server (``vllm serve ... --enable-auto-tool-choice``).
The episode's conversation (chat format of :mod:`urbex.env.policy`) is sent as OpenAI messages
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
``<answer>{...}</answer>``), otherwise the message text is returned as is.

The API key is read from the environment variable *named* in ``params.openai.api_key_env`` at
each request (surrounding whitespace stripped); it is never stored on the object, logged, or put
in an error message (a server that echoes it gets it masked in the error text).

**Episodes in flight** (``params.openai.concurrency``, :attr:`OpenAIPolicy.max_concurrency`):
one instance is shared by the runner's worker threads, one episode per thread at a time. What
belongs to an episode — its seed, its deadline — and the HTTP client are thread-local, so each
thread's requests, retries and backoff sleeps (a 429 included) are its own and never stall
another thread's; an attempt abandoned on a timeout closes only its own thread's client. The
request counters are updated under a lock. (One shared instance rather than one per thread:
a policy handed in ready-made, ``evaluate(policy_obj=...)``, and the ``workflow``/``no_tools``
wrappers around it then work unchanged.)
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from urbex.agents.openai_messages import from_openai_message, image_data_url, to_openai_messages
from urbex.config import Params
from urbex.env.policy import PolicyBase
from urbex.env.tools import openai_tool_schemas
from urbex.errors import ConfigError, PolicyError, PolicyTimeoutError

if TYPE_CHECKING:
    import httpx
    from PIL import Image

    from urbex.config import OpenAIParams, Params

__all__ = ["OpenAIPolicy"]

_RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
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
        Retries on 408/409/425/429/5xx, timeouts and dropped connections, sleeping
        ``backoff_s · 2**attempt`` (or the server's ``Retry-After``), at most 60 s; a retry
        whose sleep would end past the deadline is not made. The episode's deadline
        (:meth:`begin_episode`) bounds a request too: one that cannot finish before it raises
        :class:`~urbex.errors.PolicyTimeoutError`.
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
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url: expected an http(s) URL, got {base_url!r}")
        if concurrency < 1:
            raise ValueError(f"concurrency: expected >= 1, got {concurrency}")
        if max_retries < 0 or timeout_s <= 0:
            raise ValueError(
                f"max_retries >= 0 and timeout_s > 0 expected, got {max_retries}, {timeout_s}"
            )
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key_env = api_key_env
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_s = float(backoff_s)
        self.max_tokens = int(max_tokens)
        self.temperature = float(temperature)
        self.image_format = image_format
        self.tool_names = tool_names
        self.max_concurrency = int(concurrency)
        self._sleep = sleep
        self._local = threading.local()  # per thread: seed, deadline, client
        self._lock = threading.Lock()  # counters, the set of open clients, the data URLs
        self._clients: set[httpx.Client] = set()
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

    @property
    def _client(self) -> httpx.Client | None:
        return getattr(self._local, "client", None)

    @_client.setter
    def _client(self, client: httpx.Client | None) -> None:
        self._local.client = client

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
    def from_params(cls, params: Params | OpenAIParams, **overrides: Any) -> OpenAIPolicy:
        """From ``params.openai`` (or an :class:`~urbex.config.OpenAIParams`)."""

        p: OpenAIParams = params.openai if isinstance(params, Params) else params
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
        """Close the HTTP connection pools of every thread."""
        with self._lock:
            clients, self._clients = self._clients, set()
        for c in clients:
            c.close()
        self._client = None

    def _new_client(self) -> httpx.Client:
        import httpx

        # plain http (a local server) never uses TLS: skip loading the CA bundle per thread
        client = httpx.Client(verify=False) if self.url.startswith("http://") else httpx.Client()
        with self._lock:
            self._clients.add(client)
        self._client = client
        return client

    def _drop_client(self, client: httpx.Client) -> None:
        with self._lock:
            self._clients.discard(client)

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key_env:
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
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _redact(self, text: str) -> str:
        """``text`` (a server's reply) with the API key, should the server echo it, masked."""
        key = (os.environ.get(self.api_key_env) or "").strip() if self.api_key_env else ""
        return text.replace(key, "[REDACTED]") if len(key) >= 4 else text

    def _tools(self) -> list[dict[str, Any]]:

        tools = openai_tool_schemas(include_answer=True)
        if self.tool_names is not None:
            keep = {*self.tool_names, "answer"}
            tools = [t for t in tools if t["function"]["name"] in keep]
        return tools

    def request_body(
        self, messages: list[dict[str, Any]], images: list[Image.Image]
    ) -> dict[str, Any]:
        """The JSON body of the chat-completions request for this turn."""
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
        """One assistant turn: POST the conversation, return the reply in the text protocol.

        Raises
        ------
        PolicyTimeoutError
            No reply before the episode's deadline (:meth:`begin_episode`).
        PolicyError
            A non-retryable HTTP status, a malformed reply, every retry failed, or no reply
            within ``timeout_s`` in total.
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
        """POST ``body`` with retries, all within one deadline (see the class docstring)."""
        t_start = time.monotonic()
        end = t_start + self.timeout_s
        by_episode = self.deadline is not None and self.deadline <= end
        if by_episode:
            assert self.deadline is not None
            end = self.deadline
        headers = self._headers()
        last = "none (no time was left for an attempt)"
        attempts = 0
        while (remaining := end - time.monotonic()) > 0:
            attempts += 1
            self._count(requests=1)
            delay = min(self.backoff_s * 2 ** (attempts - 1), _MAX_DELAY_S)
            try:
                r = self._attempt(body, headers, remaining)
            except _AttemptFailed as exc:
                last = str(exc)
            else:
                if r.status_code == 200:
                    return self._json(r)
                detail = self._redact(r.text[:300])
                if r.status_code not in _RETRY_STATUS:
                    hint = (
                        " (check the key in $" + str(self.api_key_env) + ")"
                        if r.status_code in (401, 403)
                        else ""
                    )
                    raise PolicyError(f"{self.url}: HTTP {r.status_code}{hint}: {detail}")
                last = f"HTTP {r.status_code}: {detail}"
                ra = r.headers.get("retry-after")
                if ra is not None:
                    try:
                        delay = min(max(float(ra), 0.0), _MAX_DELAY_S)
                    except ValueError:
                        pass
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

    def _json(self, r: httpx.Response) -> dict[str, Any]:
        """The JSON object of a 200 reply."""
        try:
            data = r.json()
        except ValueError:
            raise PolicyError(
                f"{self.url}: reply is not JSON ({self._redact(r.text[:200])!r})"
            ) from None  # the decode error's .doc holds the whole reply
        if not isinstance(data, dict):
            raise PolicyError(
                f"{self.url}: reply is not a JSON object ({self._redact(r.text[:200])!r})"
            )
        return data

    def _attempt(
        self, body: dict[str, Any], headers: dict[str, str], timeout_s: float
    ) -> httpx.Response:
        """One POST that returns or fails within ``timeout_s`` seconds of wall time.

        httpx's timeouts bound each network operation, not their sum (a server trickling bytes
        keeps every read alive), so the request runs in a daemon thread this one waits for at
        most ``timeout_s``. A thread left behind still ends by itself (its own httpx timeouts,
        ``timeout_s`` per operation) and then closes the client it used; the next attempt
        opens a new one.

        Raises
        ------
        _AttemptFailed
            A retryable failure: a timeout (of httpx or of the wait) or a dropped connection.
        """
        import httpx

        client = self._client if self._client is not None else self._new_client()
        done = threading.Event()
        lock = threading.Lock()  # whoever sees both "done" and "abandoned" closes the client
        flags = {"done": False, "abandoned": False}
        out: dict[str, Any] = {}

        def post() -> None:
            try:
                out["reply"] = client.post(
                    self.url, headers=headers, json=body, timeout=httpx.Timeout(timeout_s)
                )
            except BaseException as exc:  # handed to the waiting thread below
                out["error"] = exc
            finally:
                with lock:
                    flags["done"] = True
                    orphan = flags["abandoned"]
                done.set()
                if orphan:
                    self._drop_client(client)
                    client.close()

        worker = threading.Thread(target=post, name="urbex-openai-request", daemon=True)
        worker.start()
        if not done.wait(timeout_s):
            with lock:
                flags["abandoned"] = True
                finished = flags["done"]
            if self._client is client:
                self._client = None
            if finished:  # it ended between the wait and the flag: close its client here
                self._drop_client(client)
                client.close()
            raise _AttemptFailed(f"no reply within {timeout_s:.1f} s (ReadTimeout)")
        error = out.get("error")
        if isinstance(error, httpx.TimeoutException | httpx.TransportError):
            raise _AttemptFailed(type(error).__name__)
        if error is not None:
            raise error
        reply: httpx.Response = out["reply"]
        return reply


def _n_attempts(n: int) -> str:
    return f"{n} attempt" if n == 1 else f"{n} attempts"


class _AttemptFailed(Exception):
    """One attempt of :meth:`OpenAIPolicy._post` failed in a way worth a retry (module only)."""
