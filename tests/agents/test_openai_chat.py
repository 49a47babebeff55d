"""OpenAIChatPolicy against a real HTTP server on loopback that speaks chat-completions."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rlvr.agents import SamplingParams
from rlvr.agents.errors import PolicyError
from rlvr.agents.evaluate import evaluate
from rlvr.agents.openai_chat import OpenAIChatPolicy
from rlvr.agents.registry import make_policy


class ChatServer:
    """Answers "What is a + b?" with the sum (or a fixed reply), at most `max_choices` per call.

    `fail_next` makes the next requests answer with that HTTP status first.
    """

    def __init__(self, max_choices: int = 16) -> None:
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.fail_next: list[int] = []
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
