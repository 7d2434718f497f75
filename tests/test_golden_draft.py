"""Golden-set drafting: prompts, kinds and tags, copy detection, drafts never scored, review, dry-run, CLI."""

import io
import json

import pytest

from ragtune import GoldenSetError, load_corpus
from ragtune.cli import main
from ragtune.golden import check_golden, load_golden
from ragtune.judgments.draft import (DraftLLM, draft_golden, draft_units, estimate_draft_cost, question_overlap,
                                  review_drafts)
from tests.answer.fake_llm import FakeLLM
from tests.helpers import write_files

DOCS = {
    "billing.md": "# Billing\n\n## Refunds\n\nRefunds are paid back to the original card within fourteen days of a "
                  "cancelled order. Partial refunds cover unused months of a yearly plan, prorated by day, and "
                  "the support team approves each one by hand before money moves.\n\n"
                  "## Invoices\n\nInvoices are emailed as PDF files on the first day of each month. Set "
                  "`invoice_email` in the account settings to send them to a finance mailbox instead of the "
                  "owner, and download older invoices from the billing page at any time.\n",
    "deploy.md": "# Deploy\n\n## Rollback\n\nA failed release is rolled back with the previous image tag; the "
                 "pipeline keeps the last five images so an operator can return to any of them within minutes, "
                 "and the database migrations are reversed in the same order they ran.\n",
}


def reply(*questions):
    return json.dumps({"questions": [{"kind": k, "q": q} for k, q in questions]})


@pytest.fixture
def corpus(tmp_path):
    return load_corpus(write_files(tmp_path / "docs", DOCS))


def test_units_ask_the_kinds_each_section_supports(corpus):
    units = {u.anchor: u for u in draft_units(corpus, per_section=2)}
    assert set(units) == {"billing.md#refunds", "billing.md#invoices", "deploy.md#rollback"}
    refunds, invoices, rollback = (units[a] for a in ("billing.md#refunds", "billing.md#invoices", "deploy.md#rollback"))
    # the next section of the same document gives multi-hop; the first section of a document an unanswerable one
    assert refunds.kinds.count("paraphrase") == 2 and "multi-hop" in refunds.kinds and "unanswerable" in refunds.kinds
    assert refunds.next_anchor == "billing.md#invoices"
    assert "identifier" in invoices.kinds and "identifier" not in refunds.kinds  # `invoice_email`
    assert "multi-hop" not in invoices.kinds and "unanswerable" not in invoices.kinds
    assert "unanswerable" in rollback.kinds and "multi-hop" not in rollback.kinds
    system, user = refunds.prompt()
    assert "own words" in system and "NEXT SECTION (billing.md#invoices)" in user and "CORPUS HEADINGS" in user
    only = draft_units(corpus, per_section=1, kinds=("paraphrase",))
    assert [u.kinds for u in only] == [("paraphrase",)] * 3


def test_a_near_twin_section_asks_a_question_that_tells_them_apart(tmp_path):
    twin = DOCS["deploy.md"].replace("# Deploy", "# Deploy v2").replace("five images", "ten images")
    corpus = load_corpus(write_files(tmp_path / "d", {**DOCS, "deploy-v2.md": twin}))
    units = {u.anchor: u for u in draft_units(corpus, per_section=1)}
    assert units["deploy.md#rollback"].similar_anchor == "deploy-v2.md#rollback"
    assert "near-duplicate" in units["deploy.md#rollback"].kinds
    assert "near-duplicate" not in units["billing.md#refunds"].kinds
    assert "SIMILAR SECTION (deploy-v2.md#rollback)" in units["deploy.md#rollback"].prompt()[1]

    class LLM:
        def chat(self, system, user):
            return reply(("near-duplicate", "How many old images does the first pipeline keep?"))

    item = draft_golden([units["deploy.md#rollback"]], LLM()).items[0]
    assert item["relevant"] == ["deploy.md#rollback"] and item["draft"]["similar"] == "deploy-v2.md#rollback"


def test_overlap_counts_content_words_of_heading_and_first_sentence():
    title, text = "Refunds", "Refunds are paid back to the original card within fourteen days. Later text."
    assert question_overlap("Are refunds paid back to the original card?", title, text) == 1.0
    # content words money, back, cancel, refund: "back" and "refund" (stemmed from "Refunds") are there
    assert question_overlap("When do I get my money back if I cancel a refund?", title, text) == pytest.approx(2 / 4)
    assert question_overlap("what is it?", title, text) == 0.0


def test_drafts_are_tagged_flagged_and_marked_draft(corpus):
    units = [u for u in draft_units(corpus, per_section=1) if u.anchor == "billing.md#refunds"]

    class LLM:
        usage = {"calls": 1}

        def chat(self, system, user):
            return "Here you go:\n```json\n" + reply(
                ("paraphrase", "Are refunds paid back to the original card?"),  # copies the first sentence
                ("paraphrase", "A second paraphrase was not asked for"),
                ("multi-hop", "Can a refund land in the finance mailbox as a PDF?"),
                ("unanswerable", "How do I pay with cryptocurrency?"),
                ("bogus", "ignored")) + "\n```"

    res = draft_golden(units, LLM(), max_overlap=0.5)
    by_kind = {i["tags"][0]: i for i in res.items}
    assert set(by_kind) == {"paraphrase", "multi-hop", "unanswerable"} and len(res.items) == 3
    assert all(i["status"] == "draft" for i in res.items)
    assert by_kind["paraphrase"]["draft"]["flag"] == "copies_section" and res.flagged == 1
    assert by_kind["multi-hop"]["relevant"] == ["billing.md#refunds", "billing.md#invoices"]
    assert "flag" not in by_kind["multi-hop"]["draft"]
    assert by_kind["unanswerable"]["relevant"] == [] and "overlap" not in by_kind["unanswerable"]["draft"]
    dropped = draft_golden(units, LLM(), max_overlap=0.5, drop_copies=True)
    assert dropped.dropped == 1 and "paraphrase" not in {i["tags"][0] for i in dropped.items}


def test_an_unreadable_reply_is_asked_again_then_listed(corpus):
    units = draft_units(corpus, per_section=1, kinds=("paraphrase",))[:1]
    calls = []

    class LLM:
        def chat(self, system, user):
            calls.append(1)
            return "sorry, no JSON here"

    res = draft_golden(units, LLM(), attempts=2)
    assert len(calls) == 2 and res.items == [] and res.failed == [units[0].anchor]


def test_drafts_are_never_scored_and_golden_check_counts_them(tmp_path, corpus):
    rows = [{"id": "a", "q": "How long do refunds take?", "relevant": ["billing.md#refunds"]},
            {"id": "d1", "q": "When is the invoice sent?", "relevant": ["billing.md#invoices"], "status": "draft",
             "draft": {"section": "billing.md#invoices", "overlap": 0.2}}]
    path = tmp_path / "g.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(GoldenSetError, match=r"1 of 2 question\(s\) are drafts.*g.jsonl:2.*golden review"):
        load_golden(path)
    loose = load_golden(path, strict=False)
    assert [i.id for i in loose.drafts] == ["d1"] and loose.items[1].draft["overlap"] == 0.2
    assert check_golden(loose, corpus).summary["drafts"] == 1
    (tmp_path / "bad.jsonl").write_text(json.dumps({**rows[0], "status": "accepted"}) + "\n")
    with pytest.raises(GoldenSetError, match="'status' must be \"draft\" or absent"):
        load_golden(tmp_path / "bad.jsonl")


def test_review_accepts_edits_rejects_and_leaves_the_rest(tmp_path, monkeypatch):
    drafts = [{"id": f"draft-{n}", "q": f"question {n}?", "relevant": ["billing.md#refunds"], "tags": ["paraphrase"],
               "status": "draft", "draft": {"section": "billing.md#refunds"}} for n in range(1, 5)]
    src, out = tmp_path / "draft.jsonl", tmp_path / "golden.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in drafts))
    out.write_text(json.dumps({"id": "draft-2", "q": "already here", "relevant": ["billing.md#refunds"]}) + "\n")
    # accept 1; "x" is not a choice; edit 2; reject 3; quit at 4
    monkeypatch.setattr("sys.stdin", io.StringIO("a\nx\ne\nHow fast is money returned?\nr\nq\n"))
    assert main(["golden", "review", str(src), "--out", str(out)]) == 0
    got = load_golden(out)  # scoreable: no drafts left in it
    assert [(i.id, i.q) for i in got] == [("draft-2", "already here"), ("draft-1", "question 1?"),
                                          ("draft-2-2", "How fast is money returned?")]
    assert all(i.status is None and not i.draft for i in got)
    left = load_golden(src, strict=False)
    assert [i.id for i in left] == ["draft-4"] and left.items[0].status == "draft"


@pytest.fixture
def server():
    s = FakeLLM([])
    yield s
    s.close()


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_draft_cli_against_a_local_api(tmp_path, corpus, server, kind, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    server.script = [reply(("paraphrase", "What happens to my money after I cancel?"))] * 3
    out = tmp_path / "draft.jsonl"
    base = server.url + ("/v1" if kind == "openai" else "")
    args = ["golden", "draft", "--corpus", str(tmp_path / "docs"),
            "--generator", f"{kind}:m1", "--out", str(out), "--per-section", "1", "--kinds", "paraphrase",
            "--base-url", base, "--price-in", "3", "--price-out", "15"]
    assert main(args + ["--dry-run"]) == 0
    dry = capsys.readouterr().out
    assert "estimate: 3 calls" in dry and "$" in dry and server.requests == [] and not out.exists()
    assert main(args) == 0
    assert len(server.requests) == 3
    path = server.requests[0]["path"]
    assert path.endswith("/chat/completions" if kind == "openai" else "/messages")
    body = server.requests[0]["body"]
    assert body["model"] == "m1"
    items = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(items) == 1  # the same question thrice is kept once
    assert items[0]["status"] == "draft" and items[0]["tags"] == ["paraphrase"]
    assert "wrote 1 draft question(s)" in capsys.readouterr().out
    assert main(["golden", "check", "--corpus", str(tmp_path / "docs"), "--golden", str(out)]) == 0
    assert "drafts: 1" in capsys.readouterr().out


def test_estimate_counts_prompt_characters(corpus):
    units = draft_units(corpus, per_section=2)
    est = estimate_draft_cost(units, generator="openai:m", price_in=1.0, price_out=2.0)
    chars = sum(len(s) + len(u) for s, u in (x.prompt() for x in units))
    assert est["calls"] == len(units) == 3 and est["input_tokens"] == chars // 4
    assert est["questions"] == sum(len(u.kinds) for u in units)
    assert est["cost"] == pytest.approx((est["input_tokens"] + 2 * est["output_tokens"]) / 1e6)


def test_generator_names_are_checked():
    with pytest.raises(Exception, match="unknown generator 'gpt'"):
        DraftLLM("gpt")
    with pytest.raises(Exception, match="openai needs a model"):
        DraftLLM("openai")
    assert DraftLLM("anthropic").name.startswith("anthropic:")
