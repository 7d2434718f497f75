"""The notebook loader: markdown cells' blocks and headings (with Jupyter's ids), code cells, optional outputs,
locations, bad files, the real notebooks."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest

from ragtune import load_corpus
from ragtune.errors import ConfigError, CorpusError
from ragtune.registry import CHUNKERS, LOADERS
from tests.helpers import shared_dataset


def notebook(*cells: dict, language: str = "python", **top) -> bytes:
    nb = {"nbformat": 4, "nbformat_minor": 5, "cells": list(cells),
          "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": language}}}
    nb.update(top)
    return json.dumps(nb).encode()


def md(source) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": source}


def code(source, *outputs: dict) -> dict:
    return {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": source, "outputs": list(outputs)}


def stream(text) -> dict:
    return {"output_type": "stream", "name": "stdout", "text": text}


def load(data: bytes, name: str = "nb.ipynb", **options):
    return LOADERS.build("ipynb", options=options).load(data, name, name)


SAMPLE = notebook(
    md(["# Running Code\n", "\n", "Intro *text* with a <button class='b'>Run</button> button and `<b>` code.\n"]),
    md("## Setup steps\n\n- first\n    - nested\n- second\n\n1. one\n2. two\n"),
    code(["import os\n", "print(os.sep)"], stream(["/\n"])),
    md("A table:\n\n| name | value |\n|------|-------|\n| a \\| b | 1 |\n\n```bash\n# not a heading\nls\n```\n"),
    {"cell_type": "raw", "metadata": {}, "source": "RAW CELL TEXT"},
    md("Setext Heading\n--------------\n\ntext under it"),
)


def test_markdown_headings_are_sections_with_jupyter_ids_as_aliases():
    doc = load(SAMPLE)
    assert doc.format == "ipynb" and doc.title == "Running Code"
    assert [(s.level, s.id, s.aliases) for s in doc.sections] == [
        (1, "running-code", ("Running-Code",)), (2, "setup-steps", ("Setup-steps",)),
        (2, "setext-heading", ("Setext-Heading",))]
    assert doc.sections[1].parent == "nb.ipynb#running-code"


def test_markdown_blocks_become_paragraphs_lists_tables_and_code():
    text = load(SAMPLE).text
    assert "Intro *text* with a Run button and `<b>` code." in text  # inline HTML tags out, code spans kept
    assert "- first\n  - nested\n- second\n1. one\n2. two" in text
    assert "| name | value |\n|---|---|\n| a \\| b | 1 |" in text
    assert "```bash\n# not a heading\nls\n```" in text
    assert "RAW CELL TEXT" not in text


def test_code_cells_are_code_blocks_in_the_kernel_language_and_outputs_are_off_by_default():
    text = load(SAMPLE).text
    assert "```python\nimport os\nprint(os.sep)\n```" in text
    assert "```text" not in text
    assert "```r\nx <- 1\n```" in load(notebook(code("x <- 1"), language="r")).text


def test_outputs_on_writes_stream_and_plain_results_and_error_lines():
    data = notebook(code("f()", stream("hello\n"),
                         {"output_type": "execute_result", "execution_count": 1, "metadata": {},
                          "data": {"text/plain": ["42"], "text/html": "<b>42</b>"}},
                         {"output_type": "display_data", "metadata": {},
                          "data": {"text/plain": "<IPython.core.display.Image object>", "image/png": "iVBORw0KGgo="}},
                         {"output_type": "error", "ename": "ZeroDivisionError", "evalue": "division by zero",
                          "traceback": ["\x1b[0;31mTraceback\x1b[0m", "  File ..."]}))
    text = load(data, outputs=True).text
    assert text == ("```python\nf()\n```\n\n```text\nhello\n```\n\n```text\n42\n```\n\n"
                    "```text\nZeroDivisionError: division by zero\n```")


def test_long_outputs_are_cut():
    lines = "".join(f"line {i}\n" for i in range(5000))
    text = load(notebook(code("loop()", stream(lines))), outputs=True).text
    out = text[text.index("```text"):]
    assert len(out) < 3200 and "line 0\n" in out and "line 4999" not in out
    assert re.search(r"\[\.\.\. [\d,]+ more characters of output left out\]", out)


def test_locations_are_cell_indexes():
    doc = load(SAMPLE)
    code_at = doc.text.index("import os")
    assert doc.location(code_at) == {"cell": 2}
    assert doc.location(doc.text.index("text under it")) == {"cell": 5}  # the raw cell 4 wrote nothing
    chunks = CHUNKERS.build("section").chunk(doc)
    assert chunks[0].metadata["location"] == {"cell": 0}
    assert any(c.metadata["location"] == {"cell": 1, "cell_end": 3} for c in chunks)


def test_code_blocks_stay_whole_in_markdown_chunks():
    body = "\n".join(f"value_{i} = compute({i})" for i in range(12))
    doc = load(notebook(md("# Work\n\n" + "Some words here. " * 40), code(body), md("Closing words. " * 40)))
    chunks = CHUNKERS.build("markdown", options={"size": 150}).chunk(doc)
    start, end = doc.text.index("```python"), doc.text.index("value_11")
    assert len(chunks) >= 3
    assert all(c.end <= start or c.start > end or (c.start <= start and c.end > end) for c in chunks)


def test_nbformat_3_worksheets_and_heading_cells():
    nb = {"nbformat": 3, "nbformat_minor": 0, "metadata": {"name": "old"}, "worksheets": [{"cells": [
        {"cell_type": "heading", "level": 1, "metadata": {}, "source": ["Old Style"]},
        {"cell_type": "code", "language": "python", "input": ["print(1)"], "metadata": {},
         "outputs": [{"output_type": "stream", "stream": "stdout", "text": ["1\n"]},
                     {"output_type": "pyout", "text": ["2"], "png": "iVBORw0KGgo="}]}]}]}
    doc = load(json.dumps(nb).encode(), outputs=True)
    assert [(s.id, s.aliases) for s in doc.sections] == [("old-style", ("Old-Style",))]
    assert doc.text == "# Old Style\n\n```python\nprint(1)\n```\n\n```text\n1\n```\n\n```text\n2\n```"


def test_title_falls_back_to_the_file_stem():
    assert load(notebook(code("x = 1")), "dir/My Analysis.ipynb").title == "My Analysis"


def test_outputs_option_is_validated():
    with pytest.raises(ConfigError, match="outputs must be true or false"):
        LOADERS.build("ipynb", options={"outputs": "maybe"})


def test_load_corpus_reads_a_folder_of_notebooks(tmp_path: Path):
    (tmp_path / "Running Code.ipynb").write_bytes(SAMPLE)
    (tmp_path / "readme.md").write_text("# Readme\n\ntext\n")
    corpus = load_corpus(tmp_path)
    doc = corpus["Running Code.ipynb"]
    assert doc.format == "ipynb" and doc.title == "Running Code"
    assert corpus.has_anchor("Running Code.ipynb#Running-Code")  # Jupyter's id, as an alias
    assert corpus.has_anchor("Running Code.ipynb#setup-steps")


# -- bad files ------------------------------------------------------------------------------------------------------

def test_not_json():
    with pytest.raises(CorpusError, match=r"^not a readable Jupyter notebook: not JSON \(.* at line 1 column"):
        load(b"# just markdown\n")


def test_json_that_is_not_a_notebook():
    with pytest.raises(CorpusError, match=r"JSON without \"cells\" \(nbformat 4\) or \"worksheets\""):
        load(b'{"name": "package.json", "version": "1.0"}')
    with pytest.raises(CorpusError, match=r"JSON, but a list, not a notebook object"):
        load(b"[1, 2]")
    with pytest.raises(CorpusError, match=r"\"cells\" is an object, not a list"):
        load(b'{"cells": {"0": {}}}')
    with pytest.raises(CorpusError, match=r"cell 0 is not a cell object"):
        load(notebook("just a string"))


def test_source_neither_string_nor_list_of_strings():
    with pytest.raises(CorpusError, match=r"the source of cell 1 is a number, not a string or a list of strings"):
        load(notebook(md("# ok"), md(42)))
    with pytest.raises(CorpusError, match=r"the source of cell 0 is a list holding an object"):
        load(notebook(code(["x = 1\n", {"oops": 1}])))


def test_a_large_base64_image_output_never_reaches_the_text():
    png = base64.b64encode(b"\x89PNG" + bytes(range(256)) * 3000).decode()  # 1 MB of base64
    image = {"output_type": "display_data", "metadata": {},
             "data": {"image/png": png, "text/plain": "<Figure size 640x480 with 1 Axes>"}}
    attached = {**md("![x](attachment:x.png)"), "attachments": {"x.png": {"image/png": png}}}
    data = notebook(md("# Plot"), code("plot()", image), attached)
    assert len(data) > 2_000_000
    doc = load(data, outputs=True)
    assert png[:100] not in doc.text and len(doc.text) < 500
    assert "<Figure size 640x480 with 1 Axes>" in doc.text


def test_empty_notebook():
    with pytest.raises(CorpusError, match=r"^no text: "):
        load(notebook())
    with pytest.raises(CorpusError, match=r"^no text: "):
        load(notebook(md(""), code([]), {"cell_type": "raw", "metadata": {}, "source": "raw only"}))


# -- real files -----------------------------------------------------------------------------------------------------

EXPECTED = {  # notebook -> (sections per level, title)
    "Running Code.ipynb": ({1: 1, 2: 7}, "Running Code"),
    "Beyond Plain Python.ipynb": ({1: 1, 2: 10}, "IPython: beyond plain Python"),
    "Custom Display Logic.ipynb": ({1: 1, 2: 5, 3: 1}, "Custom Display Logic"),
    "example.ipynb": ({1: 1, 2: 10}, "Welcome to Jupyter Notebook v7! 👋"),
    "Working With Markdown Cells.ipynb": ({1: 1, 2: 7, 3: 2}, "Markdown Cells"),
    "Typesetting Equations.ipynb": ({1: 1, 2: 12, 3: 16}, "Motivating Examples"),
}


def real_notebooks() -> list[Path]:
    folder = shared_dataset("formats") / "ipynb"
    if not folder.exists():
        pytest.skip(f"{folder} not available")
    return sorted(folder.glob("*.ipynb"))


@pytest.mark.dataset
@pytest.mark.parametrize("outputs", [False, True])
def test_real_notebooks_load_with_their_heading_trees(outputs):
    paths = real_notebooks()
    assert sorted(p.name for p in paths) == sorted(EXPECTED)
    for path in paths:
        doc = LOADERS.build("ipynb", options={"outputs": outputs}).load(path.read_bytes(), path.name, str(path))
        levels: dict[int, int] = {}
        for s in doc.sections:
            levels[s.level] = levels.get(s.level, 0) + 1
        assert (levels, doc.title) == EXPECTED[path.name], path.name
        assert not re.search(r"[A-Za-z0-9+/]{200,}", doc.text), path.name  # no base64 (attachments, images)
        assert "\x1b" not in doc.text


@pytest.mark.dataset
def test_real_notebook_details():
    folder = real_notebooks()[0].parent

    def read(name: str, **options):
        return LOADERS.build("ipynb", options=options).load((folder / name).read_bytes(), name, name)

    running = read("Running Code.ipynb", outputs=True)
    assert "```python\nprint(\"hi, stdout\")\n```\n\n```text\nhi, stdout\n```" in running.text
    assert "more characters of output left out" in running.text  # the 500-line output
    assert "```text" not in read("Running Code.ipynb").text
    markdown = read("Working With Markdown Cells.ipynb")
    assert "```\n# Heading 1\n# Heading 2\n## Heading 2.1" in markdown.text  # '#' lines in a fence: code
    example = read("example.ipynb")
    assert example.sections[1].aliases == ("Files-📂-and-Running-Sessions-🏃\u200d♀️",)
    beyond = read("Beyond Plain Python.ipynb", outputs=True)
    assert "```text\nZeroDivisionError: float division by zero\n```" in beyond.text
    equations = read("Typesetting Equations.ipynb")
    assert [s.id for s in equations.sections if s.title == "Source"][:3] == ["source", "source-1", "source-2"]
