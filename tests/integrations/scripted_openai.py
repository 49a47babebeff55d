"""A scripted OpenAI-compatible chat server on loopback: it answers each conversation with the
reply a table gives for (its first user message, the number of replies already given)."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FALLBACK = "I don't know."


class ScriptedChat:
    def __init__(self, script: Mapping[tuple[str, int], str]) -> None:
        self.script = dict(script)
        self.requests: list[dict] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                owner.requests.append(body)
                text = owner.reply(body["messages"])
                data = _stream(text) if body.get("stream") else _completion(text)
                self.send_response(200)
                kind = "text/event-stream" if body.get("stream") else "application/json"
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def reply(self, messages: list[dict]) -> str:
        users = [m for m in messages if m["role"] == "user"]
        opening = _text(users[0]["content"]) if users else ""
        replies = sum(m["role"] == "assistant" for m in messages)
        return self.script.get((opening, replies), FALLBACK)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))  # type: ignore[union-attr]


def _completion(text: str) -> bytes:
    return json.dumps(
        {
            "id": "scripted",
            "object": "chat.completion",
            "created": 0,
            "model": "scripted",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    ).encode()


def _stream(text: str) -> bytes:
    def chunk(delta: dict, finish: str | None, **extra: object) -> bytes:
        body = {
            "id": "scripted",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "scripted",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **extra,
        }
        return b"data: " + json.dumps(body).encode() + b"\n\n"

    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    return (
        chunk({"role": "assistant", "content": text}, None)
        + chunk({}, "stop", usage=usage)
        + b"data: [DONE]\n\n"
    )
