"""YAML read within a budget: every YAML ragtune reads from a user (front matter, golden sets, grids, config
files) goes through :func:`safe_yaml_load`, so a 1 kB document of nested aliases (a "billion laughs") is refused
before anything is built, never expanded into gigabytes."""

from __future__ import annotations

from typing import Any

import yaml

from .errors import ConfigError

__all__ = ["safe_yaml_load", "BoundedSafeLoader", "MAX_VALUES", "MAX_CHARS", "MAX_DEPTH"]

MAX_VALUES = 10_000
MAX_CHARS = 1_000_000
MAX_DEPTH = 32


class BoundedSafeLoader(yaml.SafeLoader):
    """The safe loader, refusing a document nested deeper than ``max_depth`` while composing it, and one whose
    aliases and merge keys expand past ``max_values`` values or ``max_chars`` characters, or that refers to
    itself, before anything is constructed. Use it through :func:`safe_yaml_load`."""

    what = "YAML"
    source = ""
    max_values = MAX_VALUES
    max_chars = MAX_CHARS
    max_depth = MAX_DEPTH
    error: type[Exception] = ConfigError
    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1  # refused here, before Python's recursion limit is reached slowly
        try:
            if self._depth > self.max_depth + 1:
                raise self.error(f"{self.source}: {self.what} nested more than {self.max_depth} levels deep")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_document(self, node: yaml.Node) -> Any:
        _check_expansion(node, self)
        return super().construct_document(node)


def safe_yaml_load(text: str, source: str, *, what: str = "YAML", max_values: int = MAX_VALUES,
                   max_chars: int = MAX_CHARS, max_depth: int = MAX_DEPTH,
                   error: type[Exception] = ConfigError) -> Any:
    """``yaml.safe_load(text)`` within a budget: ``error`` (naming ``source`` and ``what``) when it nests more
    than ``max_depth`` levels, expands past ``max_values`` values or ``max_chars`` characters once its aliases
    are written out (a 1 kB "billion laughs" document), or refers to itself. YAML syntax errors are
    ``yaml.YAMLError`` as usual."""
    loader = BoundedSafeLoader(text)
    loader.what, loader.source, loader.error = what, source, error
    # a document without aliases stands for at most one value per character of it: the budget grows with the
    # text, so no real file (a golden set of 50,000 questions) is refused, while alias expansion is
    loader.max_values, loader.max_chars = max(max_values, len(text)), max(max_chars, 4 * len(text))
    loader.max_depth = max_depth
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def _check_expansion(root: yaml.Node, loader: BoundedSafeLoader) -> None:
    """Count the values and characters ``root`` stands for once every alias is written out (each node once,
    however many times it is referred to), and refuse it past the limits or when it contains itself."""
    size: dict[int, tuple[int, int]] = {}
    open_: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        nid = id(node)
        if done:
            open_.discard(nid)
            if isinstance(node, yaml.MappingNode):
                kids = [n for pair in node.value for n in pair]
            elif isinstance(node, yaml.SequenceNode):
                kids = node.value
            else:
                kids = []
            values = 1 + sum(size[id(k)][0] for k in kids)
            chars = (len(node.value) if isinstance(node, yaml.ScalarNode) else 0) + sum(size[id(k)][1] for k in kids)
            if values > loader.max_values or chars > loader.max_chars:
                raise loader.error(f"{loader.source}: {loader.what} expands to more than {loader.max_values:,} values "
                                   f"or {loader.max_chars:,} characters once its aliases are written out; remove the "
                                   "aliases (&name / *name) or write less")
            size[nid] = (values, chars)
            continue
        if nid in size:
            continue
        if nid in open_:
            raise loader.error(f"{loader.source}: {loader.what} refers to itself (a recursive YAML alias); "
                               "write the value out instead")
        open_.add(nid)
        stack.append((node, True))
        if isinstance(node, yaml.MappingNode):
            stack.extend((n, False) for pair in node.value for n in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((n, False) for n in node.value)
