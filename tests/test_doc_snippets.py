"""Every snippet of README.md and docs/ is checked against the code (issue #25, point 5):

* python blocks parse; every import resolves to a module and names that exist; attributes used
  on an imported module (``worker.init``, ``worker.ddp_hook``, ...) exist; keyword arguments given
  to the package's functions and classes are parameters they take;
* sh blocks: every command line resolves: make targets exist in the Makefile, ``-m MODULE`` and
  console scripts exist, and the p4reduce command lines (worker, controller, mininet_topos run,
  pcap_dump) are accepted by their own argument parsers;
* `mininet>` blocks: `workers` options are accepted by the worker's parser (after the CLI adds its
  defaults), `job` lines by the run CLI's parser, `example NAME` names a script of examples/.

Placeholders the docs write on purpose (`...`, `[--opt]`, `$VAR`) are left out of the parse."""
import ast
import contextlib
import importlib
import importlib.util
import inspect
import io
import re
import shlex
import sys
from pathlib import Path

import needs
import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"```(\w*)\n(.*?)```", re.S)


def _blocks(kind):
    out = []
    for doc in DOCS:
        text = doc.read_text()
        for m in BLOCK.finditer(text):
            lang, body = m.group(1), m.group(2)
            line = text[:m.start()].count("\n") + 2
            if kind == "mininet" and lang == "" and "mininet> " in body:
                out.append(pytest.param(body, id=f"{doc.name}:{line}"))
            elif lang == kind:
                out.append(pytest.param(body, id=f"{doc.name}:{line}"))
    return out


# -- python ---------------------------------------------------------------------------------------
def _outside_tests(module):
    """A user's `import X` must not resolve only because pytest put tests/ on sys.path."""
    spec = importlib.util.find_spec(module.split(".")[0])
    where = [spec.origin] if spec and spec.origin else list(getattr(spec, "submodule_search_locations", None) or [])
    tests = str(ROOT / "tests")
    if spec is None or (where and all(str(w).startswith(tests) for w in where)):
        raise AssertionError(f"`import {module}`: no such module outside the test tree")


def _resolve(module, name=None):
    _outside_tests(module)
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name and e.name.split(".")[0] in ("torch",):      # optional dependency
            needs.missing(f"{e.name} not installed")
        raise AssertionError(f"`import {module}`: {e}") from None
    if name is None:
        return mod
    if hasattr(mod, name):
        return getattr(mod, name)
    try:
        return importlib.import_module(f"{module}.{name}")
    except ModuleNotFoundError:
        raise AssertionError(f"`from {module} import {name}`: no such name") from None


@pytest.mark.parametrize("body", _blocks("python"))
def test_python_snippets_import_what_exists(body):
    tree = ast.parse(body)
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                mod = _resolve(a.name)
                names[a.asname or a.name.split(".")[0]] = mod if a.asname else _resolve(a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                names[a.asname or a.name] = _resolve(node.module, a.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in names:
            obj = names[node.value.id]
            if inspect.ismodule(obj) and obj.__name__.startswith("p4reduce"):
                assert hasattr(obj, node.attr), f"{obj.__name__}.{node.attr} does not exist"
        if isinstance(node, ast.Call) and node.keywords:
            f = node.func
            target = None
            if isinstance(f, ast.Name) and f.id in names:
                target = names[f.id]
            elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in names:
                owner = names[f.value.id]
                if inspect.ismodule(owner) and owner.__name__.startswith("p4reduce"):
                    target = getattr(owner, f.attr)
            if target is None or not callable(target) or not getattr(target, "__module__", "").startswith("p4reduce"):
                continue
            params = inspect.signature(target).parameters
            if any(p.kind is p.VAR_KEYWORD for p in params.values()):
                continue
            for kw in node.keywords:
                assert kw.arg is None or kw.arg in params, f"{getattr(target, '__name__', target)} takes no {kw.arg}="


# -- sh -------------------------------------------------------------------------------------------
def _make_targets():
    return set(re.findall(r"^([a-zA-Z][\w-]*):", (ROOT / "Makefile").read_text(), re.M))


def _commands(body):
    joined = body.replace("\\\n", " ")
    for raw in joined.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if not line or "$(" in line or line.startswith(("CREDENTIAL=", "AUTH=")):
            continue
        for part in re.split(r"\s(?:&&|\|)\s", line):
            yield part.strip()


def _argv(words):
    """The words a parser should see: placeholders (`...`, `[--opt]`) left out."""
    return [w for w in words if w != "..." and not (w.startswith("[") or w.endswith("]"))]


def _parse(parser, argv):
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            parser.parse_args(argv)
    except SystemExit as e:
        assert e.code == 0, f"{argv}: {err.getvalue().strip()}"


def _check_python_module(module, args):
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        assert importlib.util.find_spec(module) is not None, f"-m {module}: no such module"
    finally:
        sys.path.remove(str(ROOT / "tests"))
    if module == "p4reduce.worker":
        from p4reduce.worker import cli
        argv = _argv(args)
        if argv and argv[0].startswith("--") and argv[0] != "--help":
            argv.insert(0, "allreduce")
        _parse(cli.build_parser(), argv)
    elif module == "p4reduce.controller":
        from p4reduce.controller import cli
        _parse(cli.build_parser(), _argv(args))
    elif module == "p4reduce.mininet_topos":
        from p4reduce.mininet_topos.__main__ import _parser
        _parse(_parser(), _argv(args))
    elif module == "p4reduce.protocol.pcap_dump":
        from p4reduce.protocol import pcap_dump
        if hasattr(pcap_dump, "build_parser"):
            _parse(pcap_dump.build_parser(), _argv(args))


def _check_command(cmd):
    words = shlex.split(cmd)
    if words[0] == "flock":
        return _check_command(shlex.join(words[2:]))
    if words[0] == "make":
        targets = [w for w in words[1:] if "=" not in w]
        assert all(t in _make_targets() for t in targets), f"{cmd}: no such make target"
        return
    if words[0] in ("python", "python3", ".venv/bin/python") and len(words) > 1 and words[1] == "-c":
        return
    if words[0] in ("python", "python3", ".venv/bin/python") and len(words) > 2 and words[1] == "-m":
        return _check_python_module(words[2], words[3:])
    if words[0] == ".venv/bin/pytest":
        return
    scripts = {"p4reduce-worker": "p4reduce.worker", "p4reduce-controller": "p4reduce.controller"}
    if words[0] in scripts:
        return _check_python_module(scripts[words[0]], words[1:])
    if words[0] == "p4sim-switch":
        assert importlib.util.find_spec("p4sim.simple_switch")
        return
    # other tools (tshark, wireshark, curl, git, cat): their files at least exist in the repo
    if words[0] not in ("tshark", "wireshark", "curl", "git", "cd", "p4sim-compile"):
        raise AssertionError(f"snippet command not understood by the doc check: {cmd!r}")


@pytest.mark.parametrize("body", _blocks("sh"))
def test_sh_snippets_name_what_exists(body):
    for cmd in _commands(body):
        _check_command(cmd)


# -- the `make run` CLI ---------------------------------------------------------------------------
@pytest.mark.parametrize("body", _blocks("mininet"))
def test_run_cli_snippets_are_accepted(body):
    from p4reduce.mininet_topos.runcli import DEFAULT_WORKER_OPTIONS, merge_options, parse_job_line
    from p4reduce.worker import cli
    for raw in body.splitlines():
        line = re.sub(r"\s#.*$", "", raw).strip()
        if not line.startswith("mininet> "):
            continue
        words = shlex.split(line[len("mininet> "):])
        if words[0] == "workers":
            options = words[2:] if len(words) > 1 and not words[1].startswith("-") else words[1:]
            _parse(cli.build_parser(), ["allreduce"] + merge_options(DEFAULT_WORKER_OPTIONS, options))
        elif words[0] == "job":
            spec = parse_job_line(shlex.join(words[1:]), 4, "dense")
            assert not isinstance(spec, str), f"{line}: {spec}"
        elif words[0] == "example":
            assert (ROOT / "examples" / f"{words[1]}.py").is_file(), f"{line}: no such example"
        elif words[0] not in ("jobs", "exit", "pingall") and not words[0].startswith("h"):
            raise AssertionError(f"{line}: not a command of the run CLI")


def test_the_check_finds_drift():
    """The doc check has teeth: the drift issue #25 found is caught."""
    with pytest.raises(AssertionError, match="import worker"):
        test_python_snippets_import_what_exists("import worker\n")
    with pytest.raises(AssertionError, match="no such name"):
        test_python_snippets_import_what_exists("from p4reduce.worker import p4reduce_hook_gone\n")
    with pytest.raises(AssertionError, match="takes no moed"):
        test_python_snippets_import_what_exists("from p4reduce import worker\nworker.create_job('a', 'b', 2, moed='dense')\n")
    with pytest.raises(AssertionError, match="unrecognized arguments"):
        test_sh_snippets_name_what_exists("python -m p4reduce.worker allreduce --colour red\n")
    with pytest.raises(AssertionError, match="no such make target"):
        test_sh_snippets_name_what_exists("make frobnicate\n")
    with pytest.raises(AssertionError, match="WORKERS must be a number"):
        test_run_cli_snippets_are_accepted("mininet> job big four sparse\n")
