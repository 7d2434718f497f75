"""Every golden set in the repository loads, writes back unchanged and scores exactly as before issue 41
(evidence groups and conversations): a plain golden set is a special case of the new ones."""

import json
from pathlib import Path

import pytest

from ragtune import load_golden
from ragtune.golden import GoldenSet, read_judgments, write_golden_yaml
from tests.golden_scores import GOLDEN_SETS, ROOT, figures, file_digest, plain_lines

RECORDED = json.loads((Path(__file__).parent / "data" / "golden_scores_before_41.json").read_text(encoding="utf-8"))


def _canonical(obj):
    """A golden line as the writer spells it: anchors judged not relevant as a list (``{"a": 0}`` -> ``["a"]``)."""
    if isinstance(obj, dict) and "turns" in obj:
        return {**obj, "turns": [_canonical(t) for t in obj["turns"]]}
    judged = obj.get("judged")
    if isinstance(judged, dict) and set(judged.values()) <= {0}:
        return {**obj, "judged": list(judged)}
    return obj


def test_the_repository_holds_plain_and_multistep_golden_sets():
    assert "docs/golden.jsonl" in GOLDEN_SETS and set(RECORDED) <= set(GOLDEN_SETS)
    items = [i for name in GOLDEN_SETS for i in load_golden(ROOT / name, strict=False)]
    assert any(i.evidence for i in items) and any(i.conversation for i in items)  # the new forms are covered too


@pytest.mark.parametrize("name", GOLDEN_SETS)
def test_golden_set_writes_back_unchanged(name, tmp_path):
    path = ROOT / name
    golden, row = read_judgments(path)
    out = tmp_path / path.name
    row.write(golden, out)
    original = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    written = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert written == [_canonical(o) for o in original]  # 1 and 1.0 compare equal: grades are numbers
    assert load_golden(out, strict=False).items == load_golden(path, strict=False).items
    yaml_out = tmp_path / "g.yaml"
    write_golden_yaml(golden, yaml_out)
    assert load_golden(yaml_out, strict=False).items == golden.items


@pytest.mark.parametrize("name", GOLDEN_SETS)
def test_golden_set_scores_as_its_plain_form(name, tmp_path):
    """Evidence groups and conversations change no existing figure: the set scores as the same set with evidence
    left out and each conversation flattened into plain questions, metric by metric and question by question."""
    golden = load_golden(ROOT / name)
    plain = tmp_path / "plain.jsonl"
    plain.write_text("".join(json.dumps(r) + "\n" for r in plain_lines(ROOT / name)), encoding="utf-8")
    flat = load_golden(plain)
    assert [i.id for i in flat] == [i.id for i in golden]
    before = figures(flat)
    assert figures(golden, before["keys"], before["fields"]) == before


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_golden_set_scores_as_recorded_before_issue_41(name):
    """The figures the code before issue 41 computed for the set's plain form (tests/golden_scores.py)."""
    recorded = RECORDED[name]
    path = ROOT / name
    if not path.exists() or file_digest(path) != recorded["file_sha256"]:
        pytest.skip(f"{name} changed since the figures were recorded: record them again as tests/golden_scores.py "
                    "says (the test above still compares it with its plain form)")
    now = figures(load_golden(path), recorded["keys"], recorded["fields"])
    assert now["metrics"] == recorded["metrics"]
    assert (now["questions"], now["sha256"]) == (recorded["questions"], recorded["sha256"])


def test_a_changed_score_would_be_caught():
    """The comparison is not blind: dropping one relevant anchor of one question changes the figures."""
    golden = load_golden(ROOT / "docs" / "golden.jsonl")
    item = next(i for i in golden if len(i.relevant) > 1)
    fewer = GoldenSet([i if i is not item else type(i)(**{**{f: getattr(i, f) for f in i.__slots__},
                                                          "relevant": dict(list(i.relevant.items())[:1])})
                       for i in golden])
    assert figures(fewer)["sha256"] != figures(golden)["sha256"]
