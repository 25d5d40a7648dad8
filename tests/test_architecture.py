"""docs/architecture.md's dependency table holds for the code: read the table, parse every module's
imports (ast, function-level imports and `if TYPE_CHECKING:` ones included), and fail on any import
the table does not allow, on any Python file no row covers, and on an import cycle between product
modules (type-only imports excepted there, since they never run).

The table is the one statement of the rules: change the code's dependencies and the doc together.
"""
from __future__ import annotations

import ast
import os
import pathlib
import re
import sys
from dataclasses import dataclass

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
SKIP_DIRS = {"build", "logs", "run", "__pycache__", "node_modules"}  # outputs and run state, not code
STDLIB = set(sys.stdlib_module_names) | {"__future__"}
LOCAL_TOPS = {"testbed", "tests"}  # importable from the checkout only, not as p4reduce.<name>
NAMESPACE = "p4reduce"


@dataclass(frozen=True)
class Rule:
    """One row of the table: a package, its folder, what it may import."""
    name: str
    folder: str
    packages: frozenset[str]   # p4reduce packages it may import ("*": any); its own always allowed
    third_party: frozenset[str]  # top-level third-party modules it may import ("*": any)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _names(cell: str) -> frozenset[str]:
    if cell.strip() in ("", "-", "—", "nothing", "standard library only"):
        return frozenset()
    if cell.strip().startswith("any"):
        return frozenset({"*"})
    return frozenset(re.findall(r"`([^`]+)`", cell))


def read_rules(doc: pathlib.Path = DOC) -> dict[str, Rule]:
    """The rows of the table under '## Dependency rules' in docs/architecture.md."""
    text = doc.read_text()
    section = text.split("\n## Dependency rules", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    rules = {}
    for line in rows:
        cells = _cells(line)
        assert len(cells) == 4, f"docs/architecture.md dependency row has {len(cells)} cells: {line}"
        name = cells[0].strip("`")
        folder = cells[1].strip("`").rstrip("/")
        assert name not in rules, f"docs/architecture.md: package {name} has two rows"
        rules[name] = Rule(name, folder, _names(cells[2]), _names(cells[3]))
    return rules


def package_of_path(rel: str, rules: dict[str, Rule]) -> str | None:
    """The package a file belongs to: the row whose folder is the longest prefix of its path."""
    best = None
    for r in rules.values():
        if (rel == r.folder or rel.startswith(r.folder + "/")) and (
                best is None or len(r.folder) > len(rules[best].folder)):
            best = r.name
    return best


def package_of_module(module: str, rules: dict[str, Rule]) -> str | None:
    """The package of a dotted module name (p4reduce.worker.agent -> worker), None if not ours."""
    parts = module.split(".")
    if parts[0] == NAMESPACE:
        parts = parts[1:]
        if not parts:
            return NAMESPACE
    elif parts[0] not in LOCAL_TOPS and parts[0] not in rules:
        return None  # a third-party or standard-library module
    best = None
    for i in range(len(parts), 0, -1):
        if ".".join(parts[:i]) in rules:
            best = ".".join(parts[:i])
            break
    if best is None and parts[0] in rules:
        best = parts[0]
    return best if best is not None else (NAMESPACE if module.startswith(NAMESPACE) else None)


def module_name(rel: str) -> str:
    parts = list(pathlib.PurePosixPath(rel).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if parts[:2] == ["tests", "testbed"]:   # the stand-ins are imported as `testbed` (pytest's pythonpath)
        parts = parts[1:]
    return ".".join(parts)


def _type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and (
        (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
        or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING"))


@dataclass(frozen=True)
class Import:
    module: str       # absolute, dotted; for `from X import a`, X.a (a may be a module or a name)
    base: str         # X itself
    line: int
    type_only: bool


def imports_of(source: str, rel: str) -> list[Import]:
    """Every import statement of a module, anywhere in it, with relative ones made absolute."""
    tree = ast.parse(source, rel)
    here = module_name(rel).split(".")
    package = here if rel.endswith("__init__.py") else here[:-1]
    type_only_lines: set[int] = set()
    for node in ast.walk(tree):
        if _type_checking_block(node):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Import | ast.ImportFrom):
                    type_only_lines.add(inner.lineno)
    out = []
    for node in ast.walk(tree):
        t = node.lineno in type_only_lines if isinstance(node, ast.Import | ast.ImportFrom) else False
        if isinstance(node, ast.Import):
            out += [Import(a.name, a.name, node.lineno, t) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package[:len(package) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            out += [Import(f"{base}.{a.name}", base, node.lineno, t) for a in node.names]
    return sorted(out, key=lambda i: i.line)


def python_files(root: pathlib.Path = ROOT) -> list[str]:
    """Every .py file of the checkout (not the venv or build outputs)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d not in SKIP_DIRS
                       and not d.endswith(".egg-info")]
        for f in filenames:
            if f.endswith(".py"):
                found.append(pathlib.Path(dirpath, f).relative_to(root).as_posix())
    return sorted(found)


def violations(rel: str, source: str, rules: dict[str, Rule]) -> list[str]:
    """What in one file breaks the table: imports of packages or third-party modules not allowed."""
    own = package_of_path(rel, rules)
    if own is None:
        return [f"{rel}: no row of docs/architecture.md's dependency table covers this file"]
    rule = rules[own]
    bad = []
    for imp in imports_of(source, rel):
        target = package_of_module(imp.module, rules)
        top = imp.base.split(".")[0]
        if target is not None:
            if target != own and "*" not in rule.packages and target not in rule.packages:
                bad.append(f"{rel}:{imp.line}: {own} imports {imp.module} ({target}), which the table does not allow")
        elif top and top not in STDLIB and "*" not in rule.third_party and top not in rule.third_party:
            bad.append(f"{rel}:{imp.line}: {own} imports third-party {top}, which the table does not allow")
    return bad


RULES = read_rules()
PRODUCT = [name for name, r in RULES.items() if not {"testbed", "tests"} & {name} and "*" not in r.packages]


def test_the_table_covers_the_packages_of_the_tree():
    expected = {"p4reduce", "p4sim", "p4sim.compiler", "p4sim.engine", "p4sim.engine.__init__",
                "p4sim.engine.native", "p4sim.runtime",
                "p4sim.ports", "protocol", "controller", "worker", "mininet_topos", "lab.bench", "lab.demo", "lab.training", "testbed", "tests",
                "p4src"}
    assert expected <= set(RULES), f"rows missing from the table: {sorted(expected - set(RULES))}"
    for r in RULES.values():
        assert (ROOT / r.folder).exists(), f"table row {r.name}: folder {r.folder}/ does not exist"
        for p in r.packages - {"*"}:
            assert p in RULES, f"table row {r.name} allows {p}, which has no row of its own"


def test_every_package_of_the_table_has_its_paragraph_and_every_named_module_exists():
    text = DOC.read_text()
    for r in RULES.values():
        if not r.folder.endswith(".py"):  # a row for one file is described in its package's paragraph
            assert f"**`{r.name}`**" in text, f"docs/architecture.md: no paragraph for package {r.name}"
    named = set(re.findall(r"`([A-Za-z0-9_]+(?:/[A-Za-z0-9_]+)*/[A-Za-z0-9_]+\.py)`", text))
    assert len(named) > 10
    missing = sorted(n for n in named if not (ROOT / n).exists() and not (ROOT / NAMESPACE / n).exists())
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"


def test_every_import_is_one_the_table_allows():
    problems = []
    for rel in python_files():
        problems += violations(rel, (ROOT / rel).read_text(), RULES)
    assert not problems, "\n".join(problems)


def test_product_packages_never_import_test_code():
    for name in PRODUCT:
        assert not {"testbed", "tests"} & RULES[name].packages, f"{name} may import test code"


def test_the_package_graph_has_no_cycle():
    graph = {name: set(r.packages) - {"*", name} for name, r in RULES.items() if "*" not in r.packages}
    state: dict[str, int] = {}

    def visit(n: str, path: list[str]) -> None:
        state[n] = 1
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                pytest.fail(f"the table allows a cycle: {' -> '.join([*path, n, m])}")
            if m not in state:
                visit(m, [*path, n])
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n, [])


def module_cycles(root: pathlib.Path = ROOT) -> list[list[str]]:
    """Import cycles between the product modules under `root` (type-only imports left out)."""
    modules = {module_name(rel): rel for rel in python_files(root) if package_of_path(rel, RULES) in PRODUCT}
    graph: dict[str, set[str]] = {}
    for mod, rel in modules.items():
        deps = set()
        for imp in imports_of((root / rel).read_text(), rel):
            if imp.type_only:
                continue
            for cand in (imp.module, imp.base):  # `from pkg import submodule` or `from module import name`
                if cand in modules and cand != mod:
                    deps.add(cand)
                    break
        graph[mod] = deps
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def strongconnect(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph) + 100))
    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    return cycles


def test_no_import_cycle_between_product_modules():
    """Function-level imports count: a cycle hidden inside a function is still a cycle."""
    cycles = module_cycles()
    assert not cycles, "import cycles between modules: " + "; ".join(" <-> ".join(c) for c in cycles)


# ---- the checker itself: a forbidden import is caught, an allowed one is not --------------------

def test_checker_catches_forbidden_imports():
    worker = "p4reduce/worker/example.py"
    assert violations(worker, "from p4reduce.protocol import wire\n", RULES) == []
    assert violations(worker, "from ..protocol import wire\n", RULES) == []  # relative, resolved
    bad = violations(worker, "def f():\n    from p4reduce.controller.jobs import Job\n", RULES)
    assert bad == ["p4reduce/worker/example.py:2: worker imports p4reduce.controller.jobs.Job (controller), "
                   "which the table does not allow"]
    assert violations(worker, "import grpc\n", RULES) == [
        "p4reduce/worker/example.py:1: worker imports third-party grpc, which the table does not allow"]
    assert violations("p4reduce/protocol/x.py", "from testbed.switch_model import SwitchModel\n", RULES)
    assert violations("p4sim/engine/x.py", "from p4sim.runtime import device\n", RULES)
    assert violations("p4sim/engine/x.py", "from ..runtime import device\n", RULES)
    assert violations("tests/x.py", "from testbed import fabric\nimport grpc\n", RULES) == []
    assert violations("newpkg/x.py", "import os\n", RULES) == [
        "newpkg/x.py: no row of docs/architecture.md's dependency table covers this file"]


def test_checker_reads_type_only_and_relative_imports():
    src = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .jobs import Job\n"
           "from . import slots\n")
    imps = imports_of(src, "p4reduce/controller/service.py")
    assert [(i.module, i.type_only) for i in imps] == [
        ("typing.TYPE_CHECKING", False), ("p4reduce.controller.jobs.Job", True), ("p4reduce.controller.slots", False)]
    assert package_of_module("p4sim.engine.native.switch", RULES) == "p4sim.engine.native"
    assert package_of_module("p4sim.engine", RULES) == "p4sim.engine"
    assert package_of_module("p4reduce", RULES) == "p4reduce"
    assert package_of_module("numpy", RULES) is None


def test_checker_finds_a_cycle_hidden_in_a_function(tmp_path):
    (tmp_path / "p4reduce" / "controller").mkdir(parents=True)
    (tmp_path / "p4reduce" / "controller" / "a.py").write_text("from p4reduce.controller.b import g\n")
    (tmp_path / "p4reduce" / "controller" / "b.py").write_text("def g():\n    from . import a\n    return a\n")
    (tmp_path / "p4reduce" / "controller" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import x\n")
    (tmp_path / "p4reduce" / "controller" / "d.py").write_text("from .c import y\n")
    assert module_cycles(tmp_path) == [["p4reduce.controller.a", "p4reduce.controller.b"]]
