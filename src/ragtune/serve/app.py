"""The HTTP server: search and answers from an index store, hot-swapping versions.

``POST /search``, ``POST /answer``, ``GET /versions``, ``GET /health``; OpenAPI
docs at ``/docs``. The store's current version is checked on every request;
a newly promoted (or rolled-back) version is loaded in the background while
requests keep being served by the loaded one, then swapped in one assignment,
so no request fails during a promote. Snippets come from the index only.
"""


import hmac
import threading
import time
from typing import Any

from ..errors import ConfigError, MissingDependencyError, RagtuneError

__all__ = ["create_app", "PipelineHolder"]

MAX_QUERY_CHARS = 2000
MAX_K = 100


class PipelineHolder:
    """The loaded pipeline of the store's current version, swapped when CURRENT changes.

    ``(version, pipeline)`` is one tuple assigned in one step, so a reader never pairs one
    version's label with another's pipeline.
    """

    def __init__(self, store, *, loader=None):
        from ..store import load_pipeline

        self.store = store
        self._load = loader or (lambda vid: load_pipeline(store, vid))
        self._lock = threading.Lock()
        self._loading: str | None = None
        vid = store.current_id()
        if vid is None:
            raise ConfigError(f"{store.root} has no current version; build or promote one first")
        self._current = (vid, self._load(vid))
        self.swaps = 0
        self.failed: dict[str, str] = {}  # versions that could not be loaded: not retried

    @property
    def version(self) -> str:
        return self._current[0]

    @property
    def pipeline(self):
        return self._current[1]

    def _swap_in(self, vid: str) -> None:
        try:
            pipeline = self._load(vid)
            with self._lock:
                if self.store.current_id() == vid:  # a rollback during the load wins: drop this one
                    self._current = (vid, pipeline)
                    self.swaps += 1
        except Exception as e:  # keep serving the loaded version; report, do not retry this one
            self.failed[vid] = f"{type(e).__name__}: {e}"
        finally:
            with self._lock:
                self._loading = None

    def get(self) -> tuple[str, Any]:
        current = self.store.current_id()
        if current and current != self._current[0] and current not in self.failed:
            with self._lock:
                start = self._loading is None and current != self._current[0]
                if start:
                    self._loading = current
            if start:
                threading.Thread(target=self._swap_in, args=(current,), daemon=True).start()
        return self._current


def create_app(store_dir: str, *, api_key: str | None = None, log_path: str | None = None, generator: str = "extractive",
               gate: float | None = None):
    try:
        from fastapi import Depends, FastAPI, HTTPException, Request
        from fastapi.exceptions import RequestValidationError
        from fastapi.responses import JSONResponse
        from pydantic import BaseModel, Field, field_validator
    except ImportError:
        raise MissingDependencyError("the server needs: pip install 'ragtune[serve]'") from None

    from ..answer import ConfidenceGate, answer_question, make_generator
    from ..store import IndexStore
    from .telemetry import TelemetryLog

    store = IndexStore(store_dir)
    holder = PipelineHolder(store)
    gen = make_generator(generator)
    gate_ = ConfidenceGate(gate) if gate is not None else None
    telemetry = TelemetryLog(log_path) if log_path else None

    class SearchRequest(BaseModel):
        query: str = Field(..., description="the question or keywords")
        k: int = Field(10, description=f"results to return, 1 to {MAX_K}")
        filters: str | None = Field(None, description="metadata filter expression, e.g. \"dir=tutorial\"")

        @field_validator("query")
        @classmethod
        def _query(cls, v: str) -> str:
            if not v.strip():
                raise ValueError("query is empty: send the question to search for")
            if len(v) > MAX_QUERY_CHARS:
                raise ValueError(f"query has {len(v)} characters; the limit is {MAX_QUERY_CHARS}")
            return v

        @field_validator("k")
        @classmethod
        def _k(cls, v: int) -> int:
            if not 1 <= v <= MAX_K:
                raise ValueError(f"k must be between 1 and {MAX_K}, got {v}")
            return v

    class AnswerRequest(SearchRequest):
        k: int = Field(5, description=f"contexts given to the generator, 1 to {MAX_K}")

    def check_key(request: Request) -> None:
        if api_key and not hmac.compare_digest(request.headers.get("x-api-key", "").encode(), api_key.encode()):
            raise HTTPException(status_code=401, detail="missing or wrong X-API-Key header")

    app = FastAPI(title="ragtune", description="Search and cited answers over a versioned ragtune index store.")
    app.state.holder = holder

    @app.exception_handler(RequestValidationError)
    def invalid(request: Request, exc: RequestValidationError):  # say what to fix; never echo the input back
        problems = [{"field": ".".join(str(p) for p in e.get("loc", ()) if p != "body"),
                     "message": str(e.get("msg", "")).removeprefix("Value error, ")} for e in exc.errors()]
        return JSONResponse(status_code=422, content={"detail": problems})

    def run(fn):
        try:
            return fn()
        except ConfigError as e:
            raise HTTPException(status_code=400, detail=str(e)) from None
        except RagtuneError as e:
            raise HTTPException(status_code=500, detail=str(e)) from None

    @app.get("/health")
    def health() -> dict[str, Any]:
        return {"status": "ok", "version": holder.version}

    @app.get("/versions", dependencies=[Depends(check_key)])
    def versions() -> dict[str, Any]:
        cur = store.current_id()
        return {"current": cur, "serving": holder.version, "load_errors": dict(holder.failed),
                "versions": [{"id": v.id, "created": v.created, "chunks": v.manifest["chunks"],
                              "config": v.manifest["config"], "current": v.id == cur} for v in store.list()]}

    @app.post("/search", dependencies=[Depends(check_key)])
    def search(req: SearchRequest) -> dict[str, Any]:
        version, pipeline = holder.get()
        ranking = run(lambda: pipeline.retriever.search(req.query, k=req.k, filters=req.filters))
        return {"version": version, "query": req.query, "timings_ms": {k: v * 1000 for k, v in ranking.timings.items()},
                "hits": [{"rank": i, "anchor": h.chunk.anchor, "doc_id": h.chunk.doc_id, "chunk_id": h.chunk.id,
                          "score": h.score, "start": h.chunk.start, "end": h.chunk.end,
                          "snippet": h.chunk.text[:400]} for i, h in enumerate(ranking.hits, start=1)]}

    @app.post("/answer", dependencies=[Depends(check_key)])
    def answer(req: AnswerRequest) -> dict[str, Any]:
        version, pipeline = holder.get()
        t0 = time.perf_counter()
        ans, ranking = run(lambda: answer_question(pipeline.retriever, req.query, gen, k=req.k, gate=gate_,
                                                   filters=req.filters))
        latency = (time.perf_counter() - t0) * 1000
        if telemetry is not None:
            telemetry.log(query=req.query, outcome=ans.outcome, reason=ans.reason, version=version,
                          filters=req.filters, latency_ms=latency, source="server",
                          retrieved=[{"anchor": h.chunk.anchor, "score": h.score} for h in ranking.hits])
        return {"version": version, **ans.to_dict()}

    return app
