"""Parse preprocessed P4 text into the AST: run lark's LALR parser and report syntax errors.

The tree-to-AST transformer lives in tree_to_ast.

The lark parser is built once per process. Building it takes ~0.25 s, so lark's analysis is
cached on disk; lark reads the cache with pickle, so the cache lives only in a private per-user
directory (~/.cache/p4sim, or $XDG_CACHE_HOME/p4sim: created 0700, used only if it and the cache
file belong to the user and nobody else can write them). Otherwise the parser is built without one.
"""
import os
import re
import stat
from typing import Any

from lark import Lark
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken, VisitError

from . import ast as A
from .diagnostics import CompileError
from .lexer import TypeNamePostLex, scan_type_names
from .limits import MAX_DEPTH, MAX_TOKENS
from .preprocess import Source
from .tree_to_ast import ToAst

_GRAMMAR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "p4.lark")
_parser = None


def _get_parser():
    """The LALR parser (built once per process; lark caches the grammar analysis on disk)."""
    global _parser
    if _parser is None:
        opts: dict[str, Any] = dict(parser="lalr", lexer="basic", postlex=TypeNamePostLex(), propagate_positions=True,
                    maybe_placeholders=True)
        cache = grammar_cache_path()
        try:
            _parser = Lark.open(_GRAMMAR, cache=cache, **opts) if cache else Lark.open(_GRAMMAR, **opts)
        except Exception:  # unreadable or stale cache: build without it
            _parser = Lark.open(_GRAMMAR, **opts)
    return _parser


def _private(path: str, want_dir: bool) -> bool:
    """True if `path` is ours alone: not a link, owned by us, writable by nobody else."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    kind_ok = stat.S_ISDIR(st.st_mode) if want_dir else stat.S_ISREG(st.st_mode)
    return kind_ok and st.st_uid == os.getuid() and not st.st_mode & 0o022


def grammar_cache_path() -> str | None:
    """The grammar cache file in the user's private cache directory, or None when there is no
    such directory we can trust (then the parser is built without a cache)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if not os.path.isabs(base):
        return None
    d = os.path.join(base, "p4sim")
    try:
        os.makedirs(d, mode=0o700, exist_ok=True)
    except OSError:
        return None
    if not _private(d, want_dir=True) or os.lstat(d).st_mode & 0o077:
        return None
    path = os.path.join(d, "grammar.cache")
    if os.path.lexists(path) and not _private(path, want_dir=False):
        return None
    return path


_TOKEN_NAMES = {
    "SEMICOLON": "';'", "LBRACE": "'{'", "RBRACE": "'}'", "LPAR": "'('", "RPAR": "')'",
    "IDENTIFIER": "identifier", "TYPE_IDENTIFIER": "type name", "INTEGER": "integer",
    "COLON": "':'", "COMMA": "','", "EQUAL": "'='", "DOT": "'.'", "$END": "end of file",
    "TLT": "'<'", "TGT": "'>'", "LT": "'<'", "GT": "'>'", "LSQB": "'['", "RSQB": "']'",
}


def parse(source: Source) -> A.Program:
    """Parse a preprocess.Source into an ast.Program, raising CompileError on syntax errors."""
    check_token_count(source)
    parser = _get_parser()
    parser.options.postlex.type_names = scan_type_names(source.text)
    try:
        tree = parser.parse(source.text)
    except UnexpectedToken as e:
        tok = e.token
        if tok.type == "$END":
            lines = source.text.split("\n")
            raise CompileError("syntax error: unexpected end of file", source.pos(len(lines), 1)) from None
        raise CompileError(f"syntax error: unexpected {_describe(tok)}", source.pos(tok.line, tok.column)) from None
    except UnexpectedCharacters as e:
        char = source.text[e.pos_in_stream] if e.pos_in_stream is not None else "?"
        raise CompileError(f"syntax error: unexpected character {char!r}",
                           source.pos(e.line, e.column)) from None
    except UnexpectedEOF:
        lines = source.text.split("\n")
        raise CompileError("syntax error: unexpected end of file", source.pos(len(lines), 1)) from None
    try:
        prog = ToAst(source).transform(tree)
    except VisitError as e:
        if isinstance(e.orig_exc, CompileError):
            raise e.orig_exc from None
        raise
    check_depth(prog)
    lines = source.text.rstrip().split("\n")
    prog.pos = source.pos(len(lines), 1)      # the end of the program (where 'main' belongs)
    return prog


# P4's tokens as the grammar has them, closely enough to count them (cpp has removed comments)
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*+"?|[A-Za-z_]\w*+|\d\w*+|&&&|\|[+-]\||\+\+|\.\.|<<|<=|>=|==|!=|&&|\|\||\S')


def check_token_count(source: Source, limit: int = MAX_TOKENS) -> None:
    """Refuse a program of more than `limit` tokens before lark builds anything for it, located
    at the first token past the limit."""
    count = 0
    for m in _TOKEN.finditer(source.text):
        count += 1
        if count > limit:
            off = m.start()
            line = source.text.count("\n", 0, off) + 1
            col = off - (source.text.rfind("\n", 0, off) + 1) + 1
            raise CompileError(f"the program has more than {limit} tokens after preprocessing "
                               f"(p4sim-compile's limit; a macro that expands too much?)", source.pos(line, col))


def check_depth(prog: A.Node) -> None:
    """Refuse programs nested deeper than MAX_DEPTH, at the first node that is (iteratively: the
    tree may be deeper than Python's recursion allows)."""
    stack = [(prog, 0, None)]
    while stack:
        node, depth, pos = stack.pop()
        pos = getattr(node, "pos", None) or pos
        if depth > MAX_DEPTH:
            raise CompileError(f"expressions or statements nested more than {MAX_DEPTH} levels deep "
                               f"(split the expression or the statement)", pos)
        for f in node._fields:
            v = getattr(node, f, None)
            if isinstance(v, A.Node):
                stack.append((v, depth + 1, pos))
            elif isinstance(v, list):
                for x in v:
                    if isinstance(x, A.Node):
                        stack.append((x, depth + 1, pos))
                    elif isinstance(x, tuple):       # enum members: (name, expr, pos)
                        stack.extend((y, depth + 1, pos) for y in x if isinstance(y, A.Node))


def _describe(tok):
    value = tok.value if len(tok.value) <= 40 else tok.value[:16] + "..." + tok.value[-16:]
    return f"'{value}'" if tok.value else _TOKEN_NAMES.get(tok.type, tok.type)
