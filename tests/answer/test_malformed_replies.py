"""Malformed LLM replies from the local fake server: a lenient read where the meaning is plain, else one clear
APIError, never a traceback (TypeError, KeyError, AttributeError, UnicodeDecodeError...)."""

import pytest

from ragtune import APIError, Chunk, RagtuneError
from ragtune.answer.llm import AnthropicGenerator, ChatLLM, OpenAIChatGenerator
from ragtune.embed.openai import OpenAIEmbedder
from tests.answer.fake_llm import FakeLLM

CTX = [Chunk(id="c1", doc_id="a.md", text="Refunds take 14 days.", start=0, end=21, embed_text="",
             anchors=("a.md#refunds",))]


def chat(content, usage=None, **message):
    return ("json", {"choices": [{"message": {"role": "assistant", "content": content, **message}}],
                     "usage": usage if usage is not None else {"prompt_tokens": 5, "completion_tokens": 2}})


def messages(content, usage=None, stop="end_turn"):
    return ("json", {"type": "message", "role": "assistant", "content": content, "stop_reason": stop,
                     "usage": usage if usage is not None else {"input_tokens": 5, "output_tokens": 2}})


@pytest.fixture
def llm(request):
    server = FakeLLM(request.param)
    yield server
    server.close()


LENIENT_OPENAI = [
    (chat("Refunds take 14 days [1].", {"prompt_tokens": None, "completion_tokens": None}), (0, 0)),
    (chat("Refunds take 14 days [1].", {"prompt_tokens": "7", "completion_tokens": -3}), (7, 0)),
    (chat("Refunds take 14 days [1].", "not a dict"), (0, 0)),
    (("json", {"choices": [{"message": "Refunds take 14 days [1]."}]}), (0, 0)),  # message as a plain string
    (chat([{"type": "text", "text": "Refunds take 14 days [1]."}, {"type": "image_url", "image_url": {}}]), (5, 2)),
    (("json", {"choices": [{"text": "Refunds take 14 days [1]."}], "usage": None}), (0, 0)),
]


@pytest.mark.parametrize("llm,tokens", [([a], t) for a, t in LENIENT_OPENAI], indirect=["llm"])
def test_openai_replies_read_leniently_where_the_meaning_is_plain(llm, tokens):
    a = OpenAIChatGenerator("m", base_url=llm.url + "/v1", max_retries=0).generate("q?", CTX)
    assert a.outcome == "answered" and a.sources == ["a.md#refunds"]
    assert (a.usage["input_tokens"], a.usage["output_tokens"]) == tokens


BROKEN_OPENAI = [
    (("json", {"choices": []}), "no choices\\[0\\].message: choices is a list of 0"),
    (("json", {"choices": None}), "choices is null"),
    (("json", {"choices": ["x"]}), "no choices\\[0\\].message"),
    (("json", {"choices": [{"message": None}]}), "choices\\[0\\].message is null"),
    (("json", {"choices": [{"message": 42}]}), "choices\\[0\\].message is a int"),
    (chat({"text": "x"}), "content is a dict"),
    (chat(12), "content is a int"),
    (chat([{"type": "text", "text": 5}]), "text block whose text is a int"),
    (("raw", b'{"choices": [{"message": {"content": "caf\xe9"}}]}'), "not UTF-8 text \\(byte 0xe9"),
    (("raw", b"[" * 50_000), "nested too deeply"),
    (("json", ["a", "list"]), "expected a JSON object, got list"),
]


@pytest.mark.parametrize("llm,message", [([a, a], m) for a, m in BROKEN_OPENAI], indirect=["llm"])
def test_broken_openai_replies_are_one_clear_error(llm, message):
    with pytest.raises(APIError, match=message):
        OpenAIChatGenerator("m", base_url=llm.url + "/v1", max_retries=0).generate("q?", CTX)
    with pytest.raises(APIError, match=message):  # the judge, drafting and reranker path
        ChatLLM("openai", "m", base_url=llm.url + "/v1", max_retries=0).chat("s", "u")


@pytest.mark.parametrize("llm", [[messages([{"type": "text", "text": "Refunds take 14 days [1]."}],
                                           {"input_tokens": None})]], indirect=True)
def test_anthropic_null_usage_is_zero(llm, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    a = AnthropicGenerator("m", base_url=llm.url, max_retries=0).generate("q?", CTX)
    assert a.outcome == "answered" and a.usage == {"input_tokens": 0, "output_tokens": 0}
    assert llm.requests[0]["headers"]["x-api-key"] == "k"
    assert llm.requests[0]["headers"]["anthropic-version"] == "2023-06-01"


BROKEN_ANTHROPIC = [
    (messages(None), "content is null"),
    (messages("a string?"), None),  # a bare string is read as the text
    (messages({"type": "text"}), "content is a dict"),
    (("json", {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}), "answered an error: busy"),
    (("json", {"id": "x"}), "no content; top-level keys: id"),
    (("raw", b"\xff\xfe{}"), "not UTF-8 text"),
]


@pytest.mark.parametrize("llm,message", [([a], m) for a, m in BROKEN_ANTHROPIC], indirect=["llm"])
def test_broken_anthropic_replies_are_one_clear_error(llm, message, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    gen = AnthropicGenerator("m", base_url=llm.url, max_retries=0)
    if message is None:
        assert gen.generate("q?", CTX).outcome == "answered"
        return
    with pytest.raises(APIError, match=message):
        gen.generate("q?", CTX)


@pytest.mark.parametrize("llm", [[("json", {"data": "nope"}), ("json", {"data": [{"index": 0, "embedding": "x"}]}),
                                  ("json", {"data": [{"index": None, "embedding": [1.0]}]}),
                                  ("json", {"data": [{"index": 0, "embedding": [None, 1.0]}]}),
                                  ("json", {"data": [{"index": 0}]})]], indirect=True)
def test_broken_embedding_replies_are_one_clear_error(llm):
    emb = OpenAIEmbedder("e", base_url=llm.url + "/v1", max_retries=0)
    for _ in range(5):
        with pytest.raises(RagtuneError) as e:
            emb.embed(["x"])
        assert isinstance(e.value, APIError) and "/embeddings" in str(e.value)
