"""OpenAIChatPolicy against a real HTTP server on loopback that speaks chat-completions."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rlvr.agents import SamplingParams
from rlvr.agents.errors import PolicyError
from rlvr.agents.kinds import make_policy
from rlvr.agents.openai_chat import OpenAIChatPolicy
from rlvr.rollout.episodes import evaluate


class ChatServer:
    """Answers "What is a + b?" with the sum (or a fixed reply), at most `max_choices` per call.

    `fail_next` makes the next requests answer with that HTTP status first; `raw_next` with
    those bytes (sent `drip` seconds apart, one byte at a time, when `drip` is set), under a
    Content-Length of `length` (default: their real length).
    """

    def __init__(self, max_choices: int = 16) -> None:
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.fail_next: list[int] = []
        self.raw_next: list[bytes] = []
        self.drip = 0.0
        self.length: int | None = None
        self.abort_next = 0  # answer this many requests with an aborted generation (HTTP 200)
        self.max_choices = max_choices
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                server.headers.append(dict(self.headers))
                if self.path != "/v1/chat/completions":
                    return self._reply(404, {"error": "not found"})
                if server.fail_next:
                    return self._reply(server.fail_next.pop(0), {"error": "try later"})
                if server.raw_next:
                    return self._raw(server.raw_next.pop(0))
                if server.abort_next:
                    server.abort_next -= 1
                    aborted = {"message": {"role": "assistant", "content": None}}
                    return self._reply(200, {"choices": [{**aborted, "finish_reason": "abort"}]})
                content = server.answer(body["messages"][-1]["content"])
                choices = [
                    {
                        "index": i,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                    for i in range(min(body.get("n", 1), server.max_choices))
                ]
                usage = {"prompt_tokens": 7, "completion_tokens": 5 * len(choices)}
                payload = {"object": "chat.completion", "choices": choices, "usage": usage}
                return self._reply(200, payload)

            def _raw(self, data):
                self.send_response(200)
                self.send_header("Content-Length", str(server.length or len(data)))
                self.end_headers()
                try:
                    for start in range(0, len(data), 1 if server.drip else len(data)):
                        self.wfile.write(data[start : start + (1 if server.drip else len(data))])
                        self.wfile.flush()
                        time.sleep(server.drip)
                except OSError:  # the client gave up
                    pass

            def _reply(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @staticmethod
    def answer(prompt: str) -> str:
        try:
            a, b = prompt.removeprefix("What is ").removesuffix("?").split(" + ")
            return f"The answer is \\boxed{{{int(a) + int(b)}}}."
        except ValueError:
            return "I only add."

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_evaluates_an_env_through_the_server():
    with ChatServer() as server:
        policy = make_policy(f"openai:{server.url}#tiny-adder")
        report = evaluate("test/Add-v0", policy, episodes=6, batch_size=3)
    assert report.success_rate == 1.0
    assert len(server.requests) == 6
    assert [(r.prompt_tokens, r.completion_tokens) for r in report.episodes] == [(7, 5)] * 6
    body = server.requests[0]
    assert body["model"] == "tiny-adder" and body["n"] == 1
    assert body["messages"][-1]["content"].startswith("What is ")


def test_sends_sampling_settings_and_gathers_n_choices_across_requests():
    with ChatServer(max_choices=2) as server:
        policy = OpenAIChatPolicy(server.url, "m", api_key="secret-key")
        sampling = SamplingParams(
            temperature=0.3, top_p=0.9, max_new_tokens=7, stop=("\n",), seed=5
        )
        results = policy.generate([[{"role": "user", "content": "What is 2 + 3?"}]], 5, sampling)
    assert len(results[0]) == 5 and {c.text for c in results[0]} == {"The answer is \\boxed{5}."}
    assert [r["n"] for r in server.requests] == [5, 3, 1]
    first = server.requests[0]
    assert (first["temperature"], first["top_p"], first["max_tokens"]) == (0.3, 0.9, 7)
    assert first["stop"] == ["\n"] and first["seed"] == 5
    assert server.headers[0]["Authorization"] == "Bearer secret-key"


def test_retries_overload_then_succeeds():
    with ChatServer() as server:
        server.fail_next = [503, 429]
        policy = OpenAIChatPolicy(server.url, retries=2, backoff=0.01)
        results = policy.generate([[{"role": "user", "content": "What is 1 + 1?"}]])
    assert results[0][0].text == "The answer is \\boxed{2}."
    assert len(server.requests) == 3


def test_a_server_that_keeps_failing_raises_instead_of_inventing_a_reply():
    with ChatServer() as server:
        server.fail_next = [500] * 10
        policy = OpenAIChatPolicy(server.url, retries=1, backoff=0.01)
        with pytest.raises(PolicyError, match="failed 2 time"):
            policy.generate([[{"role": "user", "content": "hi"}]])
        server.fail_next = [400]
        with pytest.raises(PolicyError, match="refused the request: HTTP 400"):
            policy.generate([[{"role": "user", "content": "hi"}]])


def test_aborted_generations_are_retried_never_scored_as_empty_replies():
    with ChatServer() as server:
        server.abort_next = 1
        policy = OpenAIChatPolicy(server.url, retries=2, backoff=0.01)
        results = policy.generate([[{"role": "user", "content": "What is 1 + 1?"}]])
        assert results[0][0].text == "The answer is \\boxed{2}."
        assert len(server.requests) == 2
        server.abort_next = 10
        with pytest.raises(PolicyError, match="aborted the generation .finish_reason 'abort'"):
            policy.generate([[{"role": "user", "content": "What is 1 + 1?"}]])


def test_unreachable_server_and_bad_url():
    with ChatServer() as server:
        url = server.url
    policy = OpenAIChatPolicy(url, retries=0, timeout=2)
    with pytest.raises(PolicyError, match="Check that the server is up"):
        policy.generate([[{"role": "user", "content": "hi"}]])
    with pytest.raises(ValueError, match="must start with http"):
        OpenAIChatPolicy("127.0.0.1:8000/v1")


def ask(policy):
    return policy.generate([[{"role": "user", "content": "What is 1 + 1?"}]])[0][0].text


def choice(content) -> bytes:
    return json.dumps({"choices": [{"message": {"content": content}}]}).encode()


def test_malformed_responses_are_retried_or_refused_never_crash():
    with ChatServer() as server:
        policy = OpenAIChatPolicy(server.url, retries=1, backoff=0.01)
        server.raw_next = [b"[]", b"{not json"]
        with pytest.raises(PolicyError, match="invalid JSON"):
            ask(policy)
        server.raw_next = [b'{"choices": [{"message": {"content": "\xff\xfe"}}]}', choice("ok")]
        assert ask(policy) == "ok", "bytes that are not UTF-8: asked again"
        server.raw_next = [b"[1, 2]"]
        assert ask(policy) == "The answer is \\boxed{2}.", "a JSON array: asked again"
        server.raw_next = [b'{"choices": [1, 2]}']
        with pytest.raises(PolicyError, match="a choice without a message"):
            ask(policy)
        server.raw_next = [choice({"text": "ok"})]
        with pytest.raises(PolicyError, match="without text content"):
            ask(policy)
        server.raw_next = [choice([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])]
        assert ask(policy) == "ab", "content parts are joined"
        server.raw_next = [choice(None)]
        assert ask(policy) == "", "no content (a refusal, a tool call) is an empty reply"


def test_a_body_cut_short_is_asked_again():
    with ChatServer() as server:
        server.raw_next = [b'{"choices": [']
        server.length = 1000
        policy = OpenAIChatPolicy(server.url, retries=1, backoff=0.01)
        assert ask(policy) == "The answer is \\boxed{2}."
        assert len(server.requests) == 2


def test_a_slow_dripping_response_is_cut_off_at_the_timeout():
    with ChatServer() as server:
        server.raw_next = [choice("x" * 100)] * 2
        server.drip = 0.05  # the whole body would take about 6 s, each byte well within 1 s
        policy = OpenAIChatPolicy(server.url, retries=1, backoff=0.01, timeout=0.5)
        started = time.monotonic()
        with pytest.raises(PolicyError, match="longer than timeout=0.5"):
            ask(policy)
    assert time.monotonic() - started < 3


def test_a_huge_response_is_refused_without_reading_it_whole():
    with ChatServer() as server:
        server.raw_next = [choice("x" * 1_000_000)]
        policy = OpenAIChatPolicy(server.url, retries=3, backoff=0.01, max_response_bytes=10_000)
        with pytest.raises(PolicyError, match="more than max_response_bytes=10000"):
            ask(policy)
        assert len(server.requests) == 1, "not asked again: the same server would do it again"
