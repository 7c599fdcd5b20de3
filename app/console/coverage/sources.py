"""The test suite read statically (`ast`, never run): each test function's strings (and those
of the module-level constants and helpers it uses, followed through imports from tests/), and
the SOQL and SOSL fixture files each test reads."""

from __future__ import annotations

import ast
import fnmatch
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

# Query text in a test's strings.
SOQL_TEXT = re.compile(r"\bSELECT\b[\s\S]*\bFROM\b", re.IGNORECASE)
SOSL_TEXT = re.compile(r"\bFIND\s*[{']", re.IGNORECASE)
QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'")
# A glob naming fixture files (`corpus_*.yaml`), as a test module globs its fixtures directory.
_FILE_GLOB = re.compile(r"[\w.-]*\*[\w*.-]*\.(?:yaml|txt)")

# The fixture files whose cases are query text, by language (globs under the root).
FIXTURE_GLOBS: dict[str, tuple[str, ...]] = {
    "soql": ("tests/soql/fixtures/**/*.yaml", "tests/soql/fixtures/**/*.txt"),
    "sosl": ("tests/sosl/fixtures/**/*.txt",),
}


def _is_text(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str | bytes)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _is_text(node.left) or _is_text(node.right)
    return False


def _docstring_free(body: list[ast.stmt]) -> list[ast.stmt]:
    first = body[0] if body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return body[1:]
    return body


@dataclass
class TestModule:
    """A module of tests/: its module-level names, and what each of its tests names."""

    rel: str  # tests/soql/test_corpus.py
    dotted: str  # tests.soql.test_corpus
    tree: ast.Module
    index: TestIndex
    values: dict[str, ast.expr] = field(default_factory=dict)
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=dict)
    imports: dict[str, tuple[str, str]] = field(default_factory=dict)
    _scalars: dict[str, str | None] = field(default_factory=dict)
    _strings: dict[str, frozenset[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for node in self.tree.body:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        self.values[target.id] = node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                if isinstance(node.target, ast.Name):
                    self.values[node.target.id] = node.value
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self.functions[node.name] = node
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = (node.module, alias.name)

    # -- values

    def scalar(self, name: str) -> str | None:
        """The text of a module-level string constant (an import of one too), else None."""
        if name in self._scalars:
            return self._scalars[name]
        self._scalars[name] = None  # a cycle resolves to nothing
        value: str | None = None
        if name in self.values and _is_text(self.values[name]):
            value = self.render(self.values[name])
        elif name in self.imports:
            module = self.index.module(self.imports[name][0])
            value = module.scalar(self.imports[name][1]) if module else None
        self._scalars[name] = value
        return value

    def render(self, node: ast.expr) -> str:
        """A string expression's text: an f-string's placeholders as `{}`, but for names of
        string constants, which are spelled out."""
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bytes):
                return node.value.decode("utf-8", "replace")
            return node.value if isinstance(node.value, str) else "{}"
        if isinstance(node, ast.JoinedStr):
            parts = []
            for part in node.values:
                if isinstance(part, ast.Constant):
                    parts.append(str(part.value))
                elif isinstance(part, ast.FormattedValue) and isinstance(part.value, ast.Name):
                    parts.append(self.scalar(part.value.id) or "{}")
                else:
                    parts.append("{}")
            return "".join(parts)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.render(node.left) + self.render(node.right)
        if isinstance(node, ast.Name):
            return self.scalar(node.id) or "{}"
        return "{}"

    def literals(self, nodes: Iterable[ast.AST]) -> tuple[list[str], set[str]]:
        """The strings written in `nodes`, and the names they use."""
        found: list[str] = []
        names: set[str] = set()

        def visit(node: ast.AST) -> None:
            if _is_text(node):
                assert isinstance(node, ast.expr)
                found.append(self.render(node))
                # A name spelled out in the text brings nothing more; another (a placeholder
                # for a list, say) is a name the test uses.
                for child in ast.walk(node):
                    if isinstance(child, ast.Name) and self.scalar(child.id) is None:
                        names.add(child.id)
                return
            if isinstance(node, ast.Name):
                names.add(node.id)
            for child in ast.iter_child_nodes(node):
                visit(child)

        for node in nodes:
            visit(node)
        return found, names

    def strings(self, name: str) -> frozenset[str]:
        """The strings a module-level name brings in: a constant's, a helper function's, an
        import's (from tests/), and those of the names they use in turn."""
        if name in self._strings:
            return self._strings[name]
        self._strings[name] = frozenset()  # a cycle brings nothing more
        nodes: list[ast.AST] = []
        if name in self.values:
            nodes = [self.values[name]]
        elif name in self.functions and not name.startswith("test"):
            function = self.functions[name]
            nodes = [*function.decorator_list, *_docstring_free(function.body)]
        elif name in self.imports:
            module = self.index.module(self.imports[name][0])
            result = module.strings(self.imports[name][1]) if module else frozenset()
            self._strings[name] = result
            return result
        found, names = self.literals(nodes)
        result = frozenset(found).union(*(self.strings(used) for used in sorted(names)))
        self._strings[name] = result
        return result

    # -- tests

    def tests(self) -> Iterator[TestCase]:
        for node in self.tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if node.name.startswith("test"):
                    yield self._case(f"{self.rel}::{node.name}", node, None)
            elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                methods = {
                    item.name: item
                    for item in node.body
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                }
                for name, method in methods.items():
                    if name.startswith("test"):
                        test_id = f"{self.rel}::{node.name}::{name}"
                        yield self._case(test_id, method, methods)

    def _case(
        self,
        test_id: str,
        function: ast.FunctionDef | ast.AsyncFunctionDef,
        methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] | None,
    ) -> TestCase:
        body = _docstring_free(function.body)
        nodes: list[ast.AST] = [*function.decorator_list, *body]
        # The class's own helpers it calls (self.x), once each.
        seen = {function.name}
        pending = list(body)
        while methods is not None and pending:
            node = pending.pop()
            for child in ast.walk(node):
                if (
                    isinstance(child, ast.Attribute)
                    and isinstance(child.value, ast.Name)
                    and child.value.id == "self"
                    and child.attr in methods
                    and child.attr not in seen
                ):
                    seen.add(child.attr)
                    helper = _docstring_free(methods[child.attr].body)
                    nodes.extend(helper)
                    pending.extend(helper)
        found, names = self.literals(nodes)
        strings = frozenset(found).union(*(self.strings(name) for name in sorted(names)))
        # The files it reads: named in its own body, or by what its decorators use (the cases
        # of a parametrized test).
        own, _ = self.literals(body)
        decorated, decorator_names = self.literals(function.decorator_list)
        reading = frozenset([*own, *decorated]).union(
            *(self.strings(name) for name in sorted(decorator_names))
        )
        return TestCase(test_id, strings, reading)


@dataclass(frozen=True)
class TestCase:
    test_id: str
    strings: frozenset[str]
    reading: frozenset[str]  # the strings that may name the fixture files it reads


@dataclass
class TestIndex:
    """Every test function of root/tests, with its strings."""

    root: Path
    modules: dict[str, TestModule | None] = field(default_factory=dict)
    cases: list[TestCase] = field(default_factory=list)

    @classmethod
    def scan(cls, root: Path) -> TestIndex:
        index = cls(root)
        for path in sorted((root / "tests").rglob("test_*.py")):
            module = index.module(_dotted(path.relative_to(root)))
            if module is not None:
                index.cases.extend(module.tests())
        index.cases.sort(key=lambda case: case.test_id)
        return index

    def module(self, dotted: str) -> TestModule | None:
        """A module of tests/ by dotted name (None outside tests/ or when it does not parse)."""
        if dotted not in self.modules:
            self.modules[dotted] = None
            path = self.root.joinpath(*dotted.split(".")).with_suffix(".py")
            if dotted.split(".")[0] == "tests" and path.is_file():
                tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
                rel = path.relative_to(self.root).as_posix()
                self.modules[dotted] = TestModule(rel, dotted, tree, self)
        return self.modules[dotted]

    def fixtures(self, language: str) -> list[Fixture]:
        paths = sorted({path for glob in FIXTURE_GLOBS[language] for path in self.root.glob(glob)})
        return [Fixture.read(path, self.root) for path in paths]


def _dotted(rel: Path) -> str:
    return ".".join(rel.with_suffix("").parts)


@dataclass(frozen=True)
class Fixture:
    """A file of query cases under tests/soql/fixtures or tests/sosl/fixtures."""

    rel: str  # tests/soql/fixtures/corpus_like.yaml
    cases: tuple[str, ...]  # the query text of each case

    @classmethod
    def read(cls, path: Path, root: Path) -> Fixture:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".yaml":
            cases = _yaml_queries(yaml.safe_load(text))
        elif path.name == "terms.txt":  # search terms, each the text between FIND's braces
            cases = [f"FIND {{{block.splitlines()[0]}}}" for block in _blocks(text)]
        else:
            cases = _blocks(text)
        return cls(path.relative_to(root).as_posix(), tuple(cases))

    def read_by(self, case: TestCase) -> bool:
        """Whether a test reads this file: a string of it ends with the file's name, or is a
        glob matching it (a glob reads only its own directory, the test module's fixtures)."""
        name = self.rel.rsplit("/", 1)[-1]
        directory = self.rel.rsplit("/", 1)[0]
        module_dir = case.test_id.split("::")[0].rsplit("/", 1)[0]
        for text in case.reading:
            if text == name or text.endswith("/" + name):
                return True
            pattern = text.rsplit("/", 1)[-1]
            if (
                _FILE_GLOB.fullmatch(pattern)
                and directory == f"{module_dir}/fixtures"
                and fnmatch.fnmatchcase(name, pattern)
            ):
                return True
        return False


def _blocks(text: str) -> list[str]:
    """The cases of a text fixture: blocks between blank lines, less comments and `=>` lines
    (a table of one case a line is one block: what matters is which constructs it holds)."""
    blocks: list[str] = []
    lines: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.strip() and not line.startswith("#"):
            if not line.startswith("=>"):
                lines.append(line)
            continue
        if not line.strip() and lines:
            blocks.append("\n".join(lines))
            lines = []
    return blocks


def _yaml_queries(value: Any) -> list[str]:
    """Every string held under a `q` key of a YAML corpus."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "q" and isinstance(item, str):
                found.append(item)
            else:
                found.extend(_yaml_queries(item))
    elif isinstance(value, list):
        for item in value:
            found.extend(_yaml_queries(item))
    return found
