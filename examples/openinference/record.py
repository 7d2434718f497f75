"""Record what a LlamaIndex app retrieves as OpenInference spans, as production would, into spans.jsonl.

The app: a LlamaIndex vector index over three pages of ragtune's docs (SentenceSplitter chunks, the bundled MiniLM
as its embedding: offline, no LLM), instrumented by openinference-instrumentation-llama-index. Each question of
golden.jsonl is one retrieval (its own trace); one more trace is an agent that searched twice for question q51,
naming it by OpenInference metadata. The spans are written as opentelemetry-sdk's ReadableSpan.to_json() writes
them, one a line. Needs `pip install 'ragtune[traces,llamaindex]'`; run from the repository root:

    python examples/openinference/record.py

then score them: ragtune eval --run examples/openinference/spans.jsonl --golden examples/openinference/golden.jsonl
--corpus docs
"""

import json
import os
from pathlib import Path

from llama_index.core import SimpleDirectoryReader, VectorStoreIndex
from llama_index.core.node_parser import SentenceSplitter
from openinference.instrumentation import TraceConfig, using_metadata
from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragtune.external.llamaindex import RagtuneEmbedding

HERE = Path(__file__).resolve().parent
DOCS = HERE.parents[1] / "docs"
PAGES = ("concepts/metrics.md", "concepts/bm25.md", "concepts/matching.md")

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
# the query embeddings are left out of the spans (TraceConfig), as a production setup keeping traces small would
LlamaIndexInstrumentor().instrument(tracer_provider=provider, config=TraceConfig(hide_embedding_vectors=True))

# the app stores paths relative to its docs folder, as a deployed app would (not this machine's absolute paths)
reader = SimpleDirectoryReader(input_files=[str(DOCS / p) for p in PAGES],
                               file_metadata=lambda p: {"file_path": os.path.relpath(p, DOCS)})
nodes = SentenceSplitter(chunk_size=200, chunk_overlap=0, tokenizer=str.split).get_nodes_from_documents(reader.load_data())
retriever = VectorStoreIndex(nodes, embed_model=RagtuneEmbedding("minilm")).as_retriever(similarity_top_k=5)

exporter.clear()  # indexing made spans too; keep only the app's questions
questions = [json.loads(line) for line in (HERE / "golden.jsonl").read_text().splitlines() if line.strip()]
for q in questions[:-1]:  # the last, q51, is asked by the agent below
    retriever.retrieve(q["q"])
agent = provider.get_tracer("agent")
with using_metadata({"qid": "q51"}):  # an agent that searched twice: the question named by its id
    with agent.start_as_current_span("agent", attributes={"openinference.span.kind": "AGENT",
                                                          "input.value": "Explain recall@k and reranker headroom"}):
        retriever.retrieve("recall@k definition")
        retriever.retrieve("reranker headroom")
with open(HERE / "spans.jsonl", "w", encoding="utf-8") as f:
    for span in exporter.get_finished_spans():
        f.write(span.to_json(indent=None) + "\n")
print(f"{len(exporter.get_finished_spans())} spans written to {HERE / 'spans.jsonl'}")
