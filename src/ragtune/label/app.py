"""The workbench's web app: one page (``static/``, every asset bundled, nothing from the network) and a JSON API.

Security follows the server's rules (:mod:`ragtune.serve.app`): loopback by default; beyond it only with an API
key (``X-API-Key`` on every API call; the page asks for it once); without a key, requests addressed to another
host name are refused (a DNS-rebinding page). Every change needs the header ``X-Ragtune-Workbench`` and a JSON
body, which a cross-site form cannot send, and the page's Content-Security-Policy allows its own origin only.

A question is *judged* when every section of its pool (a pool file's holes, or each pooled system's top ``depth``,
and sections added by search) has a grade, or when it is marked unanswerable: then judged@k is 1 at the pool's
depth for every pooled system. The header and the sidebar count that one thing (``complete``); an accepted
question with sections left to grade is ``partly judged``.

Sizes are bounded (:mod:`ragtune.label.limits`): a request body over ``max_body_bytes`` is answered 413 before it
is read (from its ``Content-Length``, or as soon as the bytes read pass the limit), and a field over its limit 422,
each with one message in ``error`` that the page shows; nothing is written.
"""

from __future__ import annotations

import hmac
import statistics
import threading
import time
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

from ..config import Opt
from ..corpus.corpus import Corpus
from ..errors import ConfigError, InputTooLargeError, MissingDependencyError, RagtuneError
from ..golden import GoldenItem
from . import golden_file as gf
from . import limits
from .candidates import Candidates, pool_query, question_terms
from .golden_file import Conflict, GoldenFile, revision

__all__ = ["Workbench", "create_app", "run_workbench", "start_warm_up", "WRITE_HEADER"]

WRITE_HEADER = "X-Ragtune-Workbench"
PAUSE_S = 300  # a gap between two judgments longer than this is a break, not pace
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


class Workbench:
    """The state behind the page: the golden file, the candidates, and this session (who judges, what was
    judged when)."""

    def __init__(self, corpus: Corpus, golden: GoldenFile, candidates: Candidates, *, judge: str,
                 pool_name: str | None = None, log_path: str | None = None, embedder: str | None = None):
        self.corpus, self.golden, self.candidates, self.judge = corpus, golden, candidates, judge
        self.pool_name, self.log_path, self.embedder = pool_name, log_path, embedder
        self.started = time.time()
        self.touched: dict[str, None] = {}  # question ids changed this session, in order
        self.graded_at: list[float] = []  # time of each grade given this session
        self.added: dict[str, list[str]] = {}  # question id -> anchors added by search, not graded yet
        self._sizes: dict[tuple[str, str, int], tuple[str, ...]] = {}  # (question, revision, added) -> pool

    # -- reading

    def question_row(self, item: GoldenItem) -> dict[str, Any]:
        """One question's row. ``status``: ``to judge``, ``draft``, ``partly judged`` (accepted, sections of its
        pool left to grade), ``judged`` (every section of its pool graded) or ``unanswerable``; ``complete`` is
        true for the last two, the questions the header counts as judged. ``authored`` and ``added``: its relevant
        sections from its authoring and those judging added since (recall is measured against both). ``graded``:
        how many sections of its ``pool`` have a grade (None: not pooled yet)."""
        anchors = self._pool_anchors(item)
        grades = item.judged_anchors
        graded = None if anchors is None else sum(a in grades for a in anchors)
        pool = None if anchors is None else len(anchors)
        complete = self._complete(item, pool, graded)
        status = gf.status(item)
        if status == "accepted":
            status = "judged" if complete else "partly judged"
        return {"id": item.id, "q": item.q, "tags": list(item.tags), "status": status, "rev": revision(item),
                "graded": graded, "pool": pool, "complete": complete, "authored": len(item.authored),
                "added": len(item.added), "origin": item.draft.get("origin"), "asked": item.draft.get("asked"),
                "conversation": item.conversation, "turn": item.turn, "history": list(item.history),
                "evidence": [list(g) for g in item.evidence]}

    def _pool_anchors(self, item: GoldenItem) -> tuple[str, ...] | None:
        if item.id not in self.candidates.pool and (item.id not in self.candidates._pooled or
                                                     self.candidates._pooled[item.id][0] != pool_query(item)):
            return None  # not pooled yet: known when the question is opened (or the warm-up reaches it)
        key = (item.id, revision(item), len(self.added.get(item.id, ())))
        if key not in self._sizes:  # the list is drawn after every change: never resolve every pool again
            self._sizes[key] = tuple(c.anchor for c in self.candidates.for_question(item, self.added.get(item.id, ())))
        return self._sizes[key]

    @staticmethod
    def _complete(item: GoldenItem, pool: int | None, graded: int | None) -> bool:
        """Judged: marked unanswerable, or accepted with every section of its pool graded."""
        if gf.status(item) == "unanswerable":
            return True
        return gf.status(item) == "accepted" and pool is not None and graded == pool

    def state(self) -> dict[str, Any]:
        items = self.golden.read()
        rows = [self.question_row(i) for i in items]
        return {"questions": rows, "progress": self.progress(items, rows), "judge": self.judge,
                "depth": self.candidates.depth,
                "golden": str(self.golden.path), "pool": self.pool_name, "traffic": self.log_path is not None,
                "retrieval": {"ready": self.candidates.ready, "systems": list(self.candidates.systems),
                              "error": self.candidates.error}}

    def progress(self, items: list[GoldenItem], rows: list[dict[str, Any]]) -> dict[str, Any]:
        done = sum(r["complete"] for r in rows)
        left = [r for r in rows if not r["complete"]]
        to_grade = sum(max((r["pool"] or self.candidates.depth) - (r["graded"] or 0), 0) for r in left)
        gaps = [b - a for a, b in zip(self.graded_at, self.graded_at[1:]) if b - a <= PAUSE_S]
        pace = statistics.median(gaps) if gaps else None
        return {"questions": len(rows), "complete": done, "to_go": len(left), "grades_left": to_grade,
                "session_grades": len(self.graded_at), "seconds_per_grade": pace,
                "minutes_left": None if pace is None else round(pace * to_grade / 60, 1)}

    def question(self, qid: str) -> dict[str, Any]:
        item = self._item(qid)
        cands = self.candidates.for_question(item, self.added.get(qid, ()))
        grades = item.judged_anchors
        proposed = set(item.draft.get("proposed") or [])
        by = {j.anchor: j.by for j in item.judgments}
        return {**self.question_row(item), "terms": question_terms(item.q),
                "candidates": [{**c.to_dict(), "grade": _number(grades.get(c.anchor)), "by": by.get(c.anchor),
                                "proposed": c.anchor in proposed} for c in cands]}

    def _item(self, qid: str) -> GoldenItem:
        item = self.golden.item(qid)
        if item is None:
            raise gf.conflict(qid, None)
        return item

    def search(self, text: str, qid: str | None) -> dict[str, Any]:
        """Sections matching ``text`` outside question ``qid``'s pool (``results``), and the anchors of those left
        out because the pool holds them already (``in_pool``), so the page can say so."""
        found = self.candidates.search(text)
        if not qid:
            return {"results": [{**c.to_dict(), "grade": None} for c in found], "in_pool": []}
        item = self._item(qid)
        pool = {c.anchor for c in self.candidates.for_question(item, self.added.get(qid, ()))}
        grades = item.judged_anchors
        return {"results": [{**c.to_dict(), "grade": _number(grades.get(c.anchor))} for c in found
                            if c.anchor not in pool],
                "in_pool": [c.anchor for c in found if c.anchor in pool]}

    def source(self, anchor: str) -> dict[str, Any]:
        span = self.corpus.resolve(anchor)
        doc = self.corpus[span.doc_id]
        return {"anchor": anchor, "doc_id": doc.id, "title": doc.title, "source": doc.source, "format": doc.format,
                "text": doc.text, "start": span.start, "end": span.section.own_end if span.section else span.end,
                "location": doc.location(span.start, span.end)}

    # -- changing

    def _changed(self, item: GoldenItem | None, qid: str) -> dict[str, Any]:
        self.touched[qid] = None
        return {"deleted": qid} if item is None else self.question(qid)

    def grade(self, qid: str, rev: str, anchor: str, value: float | None) -> dict[str, Any]:
        limits.check_anchor(anchor)
        if value is not None:
            limits.check_graded(self._item(qid).judged_anchors, anchor, f"question {qid!r}")
        pool = self.pool_name if anchor in self.candidates.pool.get(qid, ()) else "workbench"
        item = self.golden.change(qid, rev, lambda it: gf.grade(it, anchor, value, by=self.judge, pool=pool))
        if value is not None:
            self.graded_at.append(time.time())
        return self._changed(item, qid)

    def evidence(self, qid: str, rev: str, anchor: str, group: int | None) -> dict[str, Any]:
        """Put the relevant section ``anchor`` of question ``qid`` in evidence group ``group`` (0-based; the
        number of groups opens a new one) or in none."""
        limits.check_anchor(anchor)
        return self._changed(self.golden.change(qid, rev, lambda it: gf.set_evidence(it, anchor, group)), qid)

    def unanswerable(self, qid: str, rev: str, value: bool) -> dict[str, Any]:
        """Mark question ``qid`` unanswerable (``value``) or put it back to judging: never a toggle, so doing it
        twice leaves it as once. The answer says what happened (``message``, ``changed``)."""
        was = gf.status(self._item(qid)) == "unanswerable"
        out = self._changed(self.golden.change(qid, rev, lambda it: gf.mark_unanswerable(it, value)), qid)
        now = out.get("status") == "unanswerable"
        if value:
            message = "already marked unanswerable: nothing changed" if was else "marked unanswerable"
        elif was:
            message = "back to judging"
        else:
            message = "not marked unanswerable: nothing changed"
        return {**out, "message": message, "changed": was != now}

    def edit(self, qid: str, rev: str, q: str | None, tags: list[str] | None) -> dict[str, Any]:
        limits.check_text(q)
        limits.check_tags(tags)
        return self._changed(self.golden.change(qid, rev, lambda it: gf.edit(it, q=q, tags=tags)), qid)

    def delete(self, qid: str, rev: str) -> dict[str, Any]:
        self.added.pop(qid, None)
        return self._changed(self.golden.change(qid, rev, lambda it: None), qid)

    def add_to_pool(self, qid: str, anchor: str) -> dict[str, Any]:
        limits.check_anchor(anchor)
        self.corpus.resolve(anchor)  # UnknownAnchorError for a typo
        self.added.setdefault(qid, [])
        if anchor not in self.added[qid]:
            self.added[qid].append(anchor)
        return self.question(qid)

    def add(self, questions: list[dict[str, Any]]) -> dict[str, Any]:
        if len(questions) > limits.MAX_IMPORT:
            raise InputTooLargeError(f"{len(questions):,} questions at once: add at most {limits.MAX_IMPORT:,} per "
                                     "import")
        for n, obj in enumerate(questions, start=1):
            if isinstance(obj, dict):
                limits.check_question(obj, f"question {n} to add")
        added, skipped = self.golden.add(questions)
        for item in added:
            self.touched[item.id] = None
        return {"added": [i.id for i in added], "skipped": skipped}

    def traffic(self) -> list[dict[str, Any]]:
        if self.log_path is None:
            raise ConfigError("no telemetry log: start the workbench with --log FILE (the log `serve` writes)")
        from ..serve.run import open_log
        from .traffic import traffic_questions

        log = open_log(self.log_path)
        try:
            rows = list(log.rows())
        finally:
            log.close()
        known = {gf.normalise_question(i.q) for i in self.golden.read()}
        return traffic_questions(rows, self.candidates.embedder_model(), known=known)

    def export(self) -> str:
        """The questions changed this session, as they are now (JSON Lines)."""
        import json

        from ..golden import golden_records

        items = {i.id: i for i in self.golden.read()}
        return "".join(json.dumps(r, ensure_ascii=False) + "\n"  # a conversation's turns in one line
                       for r in golden_records(items[q] for q in self.touched if q in items))


def _number(x: float | None) -> float | int | None:
    return None if x is None else (int(x) if float(x).is_integer() else x)


def _asset(name: str) -> bytes:
    return resources.files("ragtune.label").joinpath("static", name).read_bytes()


def body_limit(app: Any, limit: int) -> Any:
    """A request body over ``limit`` bytes is answered 413 (``{"error": ...}``) before it is read
    (:func:`ragtune.serve.guard.body_limit`)."""
    import json

    from ..serve.guard import body_limit as limited

    message = json.dumps({"error": limits.body_too_large(limit), "limit": limit}).encode()

    async def too_large(scope, send) -> None:
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(message)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": message})

    return limited(app, limit, too_large)


def _one_line(e: Exception, limit: int = 1000) -> str:
    """An error's message, cut: a message never carries a long input back whole."""
    text = str(e)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text):,} characters)"


def create_app(bench: Workbench, *, api_key: str | None = None, host: str | None = "127.0.0.1",
               max_body_bytes: int = limits.MAX_BODY_BYTES):
    """The FastAPI app of ``bench``. A request body over ``max_body_bytes`` is refused with 413 unread."""
    from fastapi import Body, FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, Response

    from ..serve.app import host_allowed

    app = FastAPI(title="ragtune label", docs_url=None, redoc_url=None, openapi_url=None)
    types = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
             ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
    # added before the guard below, so inside it: the host, the key and the header are checked first
    app.add_middleware(lambda inner: body_limit(inner, max_body_bytes))

    @app.middleware("http")
    async def guard(request: Request, call_next):
        if api_key is None and not host_allowed(request.headers.get("host"), host):
            return JSONResponse({"error": "this workbench answers requests for localhost or its --host only"}, 421)
        if request.url.path.startswith("/api/"):
            if api_key is not None and not hmac.compare_digest(request.headers.get("x-api-key", "").encode(),
                                                               api_key.encode()):
                return JSONResponse({"error": "missing or wrong X-API-Key header", "key": True}, 401)
            if request.method != "GET" and (request.headers.get(WRITE_HEADER.lower()) != "1" or
                                            "json" not in request.headers.get("content-type", "")):
                return JSONResponse({"error": f"changes need a JSON body and the header {WRITE_HEADER}: 1"}, 403)
        response = await call_next(request)
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Cache-Control"] = "no-store"
        return response

    @app.exception_handler(Conflict)
    async def conflict(request: Request, e: Conflict):
        current = None if e.current is None else bench.question(e.qid)
        return JSONResponse({"error": str(e), "conflict": True, "current": current}, 409)

    @app.exception_handler(InputTooLargeError)
    async def too_large(request: Request, e: InputTooLargeError):
        return JSONResponse({"error": _one_line(e)}, 422)

    @app.exception_handler(RagtuneError)
    async def bad_input(request: Request, e: RagtuneError):
        return JSONResponse({"error": _one_line(e)}, 400)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, e: RequestValidationError):  # one line the page shows, no input echoed
        problems = [f"{'.'.join(str(p) for p in x.get('loc', ()) if p != 'body') or 'body'}: {x.get('msg', '')}"
                    for x in e.errors()[:3]]
        return JSONResponse({"error": _one_line(ValueError("bad request: " + "; ".join(problems)), 500)}, 422)

    def asset(name: str):
        def get():
            return Response(_asset(name), media_type=types[Path(name).suffix])
        return get

    for name in ("index.html", "workbench.js", "workbench.css"):
        app.get("/" if name == "index.html" else f"/static/{name}", include_in_schema=False)(asset(name))
    app.get("/source", include_in_schema=False)(asset("source.html"))
    app.get("/static/source.js", include_in_schema=False)(asset("source.js"))

    @app.get("/api/state")
    def state():  # with the body limit, so that the page refuses an oversized change before sending it
        return {**bench.state(), "limits": {"body_bytes": max_body_bytes,
                                            "body_message": limits.body_too_large(max_body_bytes),
                                            "question_chars": limits.MAX_QUESTION_CHARS}}

    @app.get("/api/question/{qid}")
    def question(qid: str):
        return bench.question(qid)

    @app.get("/api/search")
    def search(q: str, qid: str | None = None):
        return bench.search(q[:500], qid)

    @app.get("/api/source")
    def source(anchor: str):
        return bench.source(anchor)

    @app.get("/api/traffic")
    def traffic():
        return {"groups": bench.traffic()}

    @app.get("/api/export")
    def export():
        return Response(bench.export(), media_type="application/x-ndjson",
                        headers={"Content-Disposition": 'attachment; filename="judged-this-session.jsonl"'})

    @app.post("/api/question/{qid}/grade")
    def grade(qid: str, rev: str = Body(...), anchor: str = Body(...), grade: float | None = Body(None)):
        return bench.grade(qid, rev, anchor, grade)

    @app.post("/api/question/{qid}/evidence")
    def evidence(qid: str, rev: str = Body(...), anchor: str = Body(...), group: int | None = Body(None)):
        return bench.evidence(qid, rev, anchor, group)

    @app.post("/api/question/{qid}/unanswerable")
    def unanswerable(qid: str, rev: str = Body(...), value: bool = Body(True)):
        return bench.unanswerable(qid, rev, value)

    @app.post("/api/question/{qid}/edit")
    def edit(qid: str, rev: str = Body(...), q: str | None = Body(None), tags: list[str] | None = Body(None)):
        return bench.edit(qid, rev, q, tags)

    @app.post("/api/question/{qid}/delete")
    def delete(qid: str, rev: str = Body(..., embed=True)):
        return bench.delete(qid, rev)

    @app.post("/api/question/{qid}/pool")
    def add_to_pool(qid: str, anchor: str = Body(..., embed=True)):
        return bench.add_to_pool(qid, anchor)

    @app.post("/api/questions")
    def add(questions: list[dict[str, Any]] = Body(..., embed=True)):
        return bench.add(questions)

    return app


def start_warm_up(bench: Workbench) -> threading.Thread:
    """Build the retrievers, then pool every question, in the background (the page shows progress)."""
    def run() -> None:
        bench.candidates.warm()
        if bench.log_path is not None:  # the traffic import embeds and clusters: load both now, not on the click
            try:
                import sklearn.cluster  # noqa: F401

                bench.candidates.embedder_model().embed_queries(["warm up"])
            except Exception:  # noqa: BLE001 - the import shows its own error
                pass
        for item in bench.golden.read():
            try:
                bench.candidates.pooled(item)
            except Exception:  # noqa: BLE001 - the question shows its error when opened
                pass

    t = threading.Thread(target=run, name="ragtune-label-warm-up", daemon=True)
    t.start()
    return t


def run_workbench(
    corpus: Any, golden: str, *,
    pool: Annotated[str | None, Opt("a pool file (`ragtune pool --out`): judge its holes; questions it does not "
                                    "hold are pooled on the spot")] = None,
    log_path: Annotated[str | None, Opt("a telemetry log (`serve` writes STORE/telemetry.sqlite): import the "
                                        "questions users asked", flag="--log")] = None,
    judge: Annotated[str | None, Opt("your name in the judgments' provenance (default: $USER)")] = None,
    pool_systems: Annotated[str, Opt("first stages pooled on the spot, comma separated (bm25, dense, "
                                     "hybrid)")] = "bm25,dense,hybrid",
    depth: Annotated[int, Opt("hits per system pooled on the spot", lo=1, hi=100)] = 10,
    embedder: Annotated[str | None, Opt("embedder of the dense and hybrid pools (default MiniLM)")] = None,
    host: Annotated[str, Opt("interface to listen on (default 127.0.0.1: this machine only)")] = "127.0.0.1",
    port: Annotated[int, Opt("port to listen on", lo=1, hi=65535)] = 8400,
    insecure_no_key: Annotated[bool, Opt("allow listening beyond this machine without a key")] = False,
    api_key_env: Annotated[str, Opt("environment variable holding the API key the page must send (needed beyond "
                                    "this machine)")] = "RAGTUNE_API_KEY",
    api_key: str | None = None,
) -> None:
    """Serve the workbench for ``golden`` (created when it does not exist) over ``corpus`` until interrupted.
    The API key is ``api_key``, else the value of the variable ``api_key_env`` (unset: no key)."""
    import getpass
    import os
    import sys

    from ..corpus import load_corpus
    from ..judgments.pool import read_pool_file
    from ..judgments.sample import read_sampled
    from ..serve.app import check_bind, check_port
    from ..serve.run import open_log

    try:
        import uvicorn
    except ImportError:
        raise MissingDependencyError("the workbench needs the server: pip install 'ragtune[serve]'") from None
    api_key = api_key or os.environ.get(api_key_env or "") or None
    warning = check_bind(host, api_key, insecure_no_key)
    check_port(port)
    corpus = corpus if isinstance(corpus, Corpus) else load_corpus(corpus)
    file = GoldenFile(golden)
    pooled = dict(read_pool_file(pool)) if pool else None
    if log_path is not None:
        open_log(log_path).close()  # a missing or broken log fails now, not at the first import
    try:
        who = judge or getpass.getuser()
    except (KeyError, OSError):
        who = "anonymous"
    candidates = Candidates(corpus, pool=pooled, systems=[s.strip() for s in pool_systems.split(",") if s.strip()],
                            depth=depth, embedder=embedder, sampled=read_sampled(pool) if pool else None)
    bench = Workbench(corpus, file, candidates, judge=who, pool_name=Path(pool).name if pool else None,
                      log_path=log_path, embedder=embedder)
    app = create_app(bench, api_key=api_key, host=host)
    start_warm_up(bench)
    if warning:
        print(warning, file=sys.stderr)
    n = len(file.read())
    print(f"judging {golden} ({n} question{'s' if n != 1 else ''}{'; a new file' if not n else ''}) over "
          f"{corpus.root or 'the corpus'} as {who!r}: open http://{host}:{port}/ (Ctrl+C stops; every judgment "
          "is saved at once)", file=sys.stderr)
    uvicorn.run(app, host=host, port=port, log_level="warning")
