"""A local HTTP server speaking the OpenAI chat-completions and Anthropic Messages wire formats.

Each request pops the next action from a script: a reply string, an HTTP status (429, 500, 401...),
("slow", reply), ("refusal", ""), ("raw", bytes) for a body that is not JSON, or ("json", payload) for a
whole JSON answer of any shape (malformed replies).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeLLM:
    def __init__(self, script):
        self.script = list(script)
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, code, payload: bytes, headers=()):
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for k, v in headers:
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(payload)
                except BrokenPipeError:  # the client gave up (timeout tests)
                    pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "body": body, "headers": {k.lower(): v for k, v in self.headers.items()}})
                action = outer.script.pop(0) if outer.script else "ok [1]"
                if isinstance(action, tuple) and action[0] == "slow":
                    time.sleep(1.5)
                    action = action[1]
                if isinstance(action, int):
                    err = {"type": "error", "error": {"type": "rate_limit_error" if action == 429 else "api_error",
                                                      "message": "try later"}}
                    return self._send(action, json.dumps(err).encode(), [("retry-after", "0"), ("retry-after-ms", "10")])
                if isinstance(action, tuple) and action[0] == "raw":
                    return self._send(200, action[1])
                if isinstance(action, tuple) and action[0] == "json":
                    return self._send(200, json.dumps(action[1]).encode())
                refusal = isinstance(action, tuple) and action[0] == "refusal"
                text = "" if refusal else action
                if self.path.endswith("/messages"):
                    payload = {"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                               "content": [{"type": "text", "text": text}] if text else [],
                               "stop_reason": "refusal" if refusal else "end_turn", "stop_sequence": None,
                               "usage": {"input_tokens": 120, "output_tokens": 30}}
                else:
                    payload = {"id": "chatcmpl-1", "object": "chat.completion", "model": body["model"],
                               "choices": [{"index": 0, "finish_reason": "stop",
                                            "message": {"role": "assistant", "content": None if refusal else text,
                                                        "refusal": "I can't help with that." if refusal else None}}],
                               "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}
                return self._send(200, json.dumps(payload).encode())

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
