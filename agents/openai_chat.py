"""`OpenAIChatPolicy`: an OpenAI-compatible chat-completions server as a `Policy` (eval only).

Works with vLLM, llama.cpp's server, SGLang, Ollama and hosted APIs: it POSTs to
`{base_url}/chat/completions` with the standard library only. Conversations are sent
concurrently (`max_concurrency`); a failed request (connection error, 429, 5xx) is retried with
exponential backoff (so is a generation the server aborted, `finish_reason` "abort" or "error"),
and a server that keeps failing raises `PolicyError` rather than inventing a reply. Servers that
return fewer than `n` choices are asked again for the rest. No token ids or log-probabilities
come back, so this policy cannot be trained.
"""

from __future__ import annotations

import http.client
import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from rlvr.agents.errors import PolicyError
from rlvr.agents.policy import Completion, Conversation, SamplingParams

_RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}
_FAILED_FINISH = {"abort", "error"}


class OpenAIChatPolicy:
    """Completions from an OpenAI-compatible server.

    Arguments:
        base_url: e.g. "http://127.0.0.1:8000/v1" (the path before `/chat/completions`).
        model: the model name the server expects (vLLM: the served model).
        api_key: sent as a bearer token; default: the `OPENAI_API_KEY` environment variable.
        max_concurrency: requests in flight at once.
        timeout: seconds per request, the whole response included (a server that sends it
            slowly is cut off too).
        retries: extra attempts after a retryable failure.
        extra_body: more JSON fields for every request (e.g. {"top_k": 20} for vLLM).
        max_response_bytes: a longer response is refused (never read into memory whole).
    """

    def __init__(
        self,
        base_url: str,
        model: str = "default",
        *,
        api_key: str | None = None,
        max_concurrency: int = 8,
        timeout: float = 120.0,
        retries: int = 3,
        backoff: float = 0.5,
        extra_body: dict[str, Any] | None = None,
        max_response_bytes: int = 64 * 2**20,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
        if max_concurrency < 1 or retries < 0 or timeout <= 0 or max_response_bytes < 1:
            raise ValueError(
                "need max_concurrency >= 1, retries >= 0, timeout > 0 and max_response_bytes >= 1"
            )
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.max_concurrency = max_concurrency
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.extra_body = dict(extra_body or {})
        self.max_response_bytes = max_response_bytes

    def generate(
        self,
        conversations: Sequence[Conversation],
        n: int = 1,
        sampling: SamplingParams | None = None,
    ) -> list[list[Completion]]:
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        sampling = sampling or SamplingParams()
        if len(conversations) <= 1:
            return [self._complete(c, n, sampling) for c in conversations]
        with ThreadPoolExecutor(max_workers=self.max_concurrency) as pool:
            return list(pool.map(lambda c: self._complete(c, n, sampling), conversations))

    def _complete(self, conversation: Conversation, n: int, sampling: SamplingParams) -> list:
        completions: list[Completion] = []
        aborted = 0
        while len(completions) < n:
            body = self._body(conversation, n - len(completions), sampling)
            response = self._post(body)
            choices = response.get("choices") or []
            if not isinstance(choices, list) or not choices:
                raise PolicyError(f"{self.url} returned no choices: {_excerpt(response)}")
            usage = _usage_per_choice(response.get("usage"), len(choices))
            # A generation the server gave up on (vLLM: "abort"; some proxies: "error") is no
            # reply of the model's: judging its empty text would score a fake 0. Ask again.
            failed = [c for c in choices if _field(c, "finish_reason") in _FAILED_FINISH]
            if failed:
                aborted += 1
                if aborted > self.retries:
                    reason = _field(failed[0], "finish_reason")
                    raise PolicyError(
                        f"{self.url} aborted the generation (finish_reason {reason!r}) "
                        f"{aborted} time(s): the server is overloaded or restarting; no reply "
                        "was scored"
                    )
                time.sleep(self.backoff * 2 ** (aborted - 1))
                choices = [c for c in choices if c not in failed]
            for choice in choices[: n - len(completions)]:
                ended = "length" if _field(choice, "finish_reason") == "length" else "stop"
                text = self._content(choice)
                completions.append(Completion(text, finish_reason=ended, metadata=dict(usage)))
        return completions

    def _content(self, choice: Any) -> str:
        """The reply text of one choice: a string, or a list of content parts (text joined)."""
        message = _field(choice, "message")
        if not isinstance(message, dict):
            raise PolicyError(f"{self.url} returned a choice without a message: {_excerpt(choice)}")
        content = message.get("content")
        if content is None:  # e.g. a refusal or a tool call: no text
            return ""
        if isinstance(content, list):
            parts = [_field(part, "text") for part in content]
            if all(isinstance(part, str) for part in parts):
                return "".join(parts)
        if isinstance(content, str):
            return content
        raise PolicyError(f"{self.url} returned a choice without text content: {_excerpt(choice)}")

    def _body(self, conversation: Conversation, n: int, sampling: SamplingParams) -> dict:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m["role"], "content": m["content"]} for m in conversation],
            "n": n,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_new_tokens,
        }
        if sampling.stop:
            body["stop"] = list(sampling.stop)
        if sampling.seed is not None:
            body["seed"] = sampling.seed
        if sampling.top_k:
            body["top_k"] = sampling.top_k
        return {**body, **self.extra_body}

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        data = json.dumps(body).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last_error = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            deadline = time.monotonic() + self.timeout
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    payload = json.loads(self._read(response, deadline))
                if isinstance(payload, dict):
                    return payload
                last_error = f"the response is not a JSON object: {_excerpt(payload)}"
            except urllib.error.HTTPError as exc:
                detail = exc.read(300).decode("utf-8", "replace")
                last_error = f"HTTP {exc.code}: {detail}"
                if exc.code not in _RETRY_STATUS:
                    raise PolicyError(f"{self.url} refused the request: {last_error}") from None
            except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
                # OSError covers timeouts and resets; HTTPException a body cut short
                last_error = f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                last_error = f"invalid JSON in the response: {exc}"
        raise PolicyError(
            f"{self.url} failed {self.retries + 1} time(s); last error: {last_error}. Check that "
            "the server is up and that base_url ends where /chat/completions begins"
        )

    def _read(self, response: Any, deadline: float) -> bytes:
        """The body, in chunks, within the deadline and the size limit."""
        chunks: list[bytes] = []
        size = 0
        while chunk := response.read1(65536):
            size += len(chunk)
            if size > self.max_response_bytes:
                raise PolicyError(
                    f"{self.url} sent more than max_response_bytes={self.max_response_bytes}"
                )
            if time.monotonic() > deadline:
                raise TimeoutError(f"the response took longer than timeout={self.timeout} s")
            chunks.append(chunk)
        return b"".join(chunks)


def _field(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else None


def _excerpt(value: Any) -> str:
    return json.dumps(value)[:200]


def _usage_per_choice(usage: Any, choices: int) -> dict[str, int]:
    """The server's token counts for one choice: the prompt's count, and the completion tokens
    shared out evenly (servers report one total for all `n` choices)."""
    if not isinstance(usage, dict):
        return {}
    counts = {}
    if isinstance(usage.get("prompt_tokens"), int):
        counts["prompt_tokens"] = usage["prompt_tokens"]
    if isinstance(usage.get("completion_tokens"), int):
        counts["completion_tokens"] = usage["completion_tokens"] // max(choices, 1)
    return counts
