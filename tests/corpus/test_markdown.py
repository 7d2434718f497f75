from ragtune.corpus.markdown import parse_markdown, slugify, strip_inline_markdown


def sections(text: str):
    return parse_markdown(text, doc_id="d.md").sections


def test_github_slugs_drop_punctuation_and_keep_each_space():
    assert slugify("Query Parameters") == "query-parameters"
    assert slugify("What's new?") == "whats-new"
    assert slugify("a & b") == "a--b"
    assert slugify("snake_case and-dash") == "snake_case-and-dash"
    assert slugify("Über Café") == "über-café"


def test_inline_markdown_is_rendered_before_slugging():
    assert strip_inline_markdown("Use `Query` with **defaults** and [links](x.md)") == "Use Query with defaults and links"
    assert strip_inline_markdown("keep snake_case_names intact") == "keep snake_case_names intact"
    ids = [s.id for s in sections("## Use `Depends()` *here*\n")]
    assert ids == ["use-depends-here"]


def test_explicit_ids_in_all_spellings():
    text = "# A {#first}\n\n## B { #second }\n\n## C { #third .cls data-x=1 }\n\n## D {not an attr list}\n"
    got = [(s.id, s.title) for s in sections(text)]
    assert got == [("first", "A"), ("second", "B"), ("third", "C"), ("d-not-an-attr-list", "D {not an attr list}")]


def test_duplicate_headings_are_numbered_like_github():
    ids = [s.id for s in sections("# X\n## X\n## X\n## X 1\n")]
    assert ids == ["x", "x-1", "x-2", "x-1-1"]


def test_headings_in_fenced_code_are_ignored():
    text = "# Real\n\n```bash\n# comment\n```\n\n~~~~\n## also code\n```\nstill code\n~~~~\n\n## After\n"
    assert [s.title for s in sections(text)] == ["Real", "After"]


def test_setext_headings_and_thematic_breaks():
    text = "Title\n=====\n\ntext\n\nSub part\n---\n\nbody\n\n---\n\n- item\n---\n"
    secs = sections(text)
    assert [(s.title, s.level) for s in secs] == [("Title", 1), ("Sub part", 2)]
    assert text[secs[1].start :].startswith("Sub part")


def test_atx_closing_hashes_and_indentation():
    text = "## Closed ##\n    # indented code\n   ### Three spaces\n#NoSpace\n"
    assert [(s.title, s.level) for s in sections(text)] == [("Closed", 2), ("Three spaces", 3)]


def test_spans_paths_and_parents():
    text = "# A\na\n## B\nb\n### C\nc\n## D\nd\n# E\ne\n"
    secs = {s.title: s for s in sections(text)}
    assert secs["C"].heading_path == ("A", "B", "C")
    assert secs["C"].parent == "d.md#b"
    assert secs["A"].parent is None
    # B includes its subsection C and stops at D
    assert text[secs["B"].start : secs["B"].end] == "## B\nb\n### C\nc\n"
    assert text[secs["B"].start : secs["B"].own_end] == "## B\nb\n"
    assert text[secs["A"].start : secs["A"].end].endswith("## D\nd\n")
    assert secs["E"].end == len(text)


def test_front_matter_is_metadata_and_not_body():
    text = "---\ntitle: T\ntags: [a, b]\n---\n# H\nbody\n"
    parsed = parse_markdown(text, doc_id="d.md")
    assert parsed.front_matter == {"title": "T", "tags": ["a", "b"]}
    head = "---\ntitle: T\ntags: [a, b]\n---\n"
    # the front matter is blanked, not cut: offsets stay offsets into the file, lines stay lines
    assert parsed.body == "   \n        \n            \n   \n# H\nbody\n"
    assert len(parsed.body) == len(text)
    assert parsed.body_offset == len(head)
    assert parsed.sections[0].start == len(head)
    assert text[parsed.sections[0].start:] == "# H\nbody\n"


def test_crlf_line_endings():
    text = "# One\r\nbody\r\n\r\n## Two\r\nmore\r\n"
    secs = sections(text)
    assert [s.title for s in secs] == ["One", "Two"]
    assert text[secs[1].start :].startswith("## Two")
