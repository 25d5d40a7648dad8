"""Parse preprocessed P4 text into the AST: run lark's LALR parser and report syntax errors.

The tree-to-AST transformer lives in tree_to_ast.

The lark parser is built once per process and cached on disk by lark, so a compile does not pay
for grammar analysis.
"""
import os
import tempfile

from lark import Lark
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken, VisitError

from .diagnostics import CompileError
from .lexer import TypeNamePostLex, scan_type_names
from .tree_to_ast import ToAst

_GRAMMAR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "p4.lark")
_parser = None


def _get_parser():
    """The LALR parser (built once per process; lark caches the grammar analysis on disk)."""
    global _parser
    if _parser is None:
        opts = dict(parser="lalr", lexer="basic", postlex=TypeNamePostLex(), propagate_positions=True,
                    maybe_placeholders=True)
        cache = os.path.join(tempfile.gettempdir(), f"p4sim-grammar-{os.getuid()}.cache")
        try:
            _parser = Lark.open(_GRAMMAR, cache=cache, **opts)
        except Exception:  # unreadable or stale cache: build without it
            _parser = Lark.open(_GRAMMAR, **opts)
    return _parser


_TOKEN_NAMES = {
    "SEMICOLON": "';'", "LBRACE": "'{'", "RBRACE": "'}'", "LPAR": "'('", "RPAR": "')'",
    "IDENTIFIER": "identifier", "TYPE_IDENTIFIER": "type name", "INTEGER": "integer",
    "COLON": "':'", "COMMA": "','", "EQUAL": "'='", "DOT": "'.'", "$END": "end of file",
    "TLT": "'<'", "TGT": "'>'", "LT": "'<'", "GT": "'>'", "LSQB": "'['", "RSQB": "']'",
}


def parse(source):
    """Parse a preprocess.Source into an ast.Program, raising CompileError on syntax errors."""
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
        raise CompileError(f"syntax error: unexpected character {source.text[e.pos_in_stream]!r}",
                           source.pos(e.line, e.column)) from None
    except UnexpectedEOF:
        lines = source.text.split("\n")
        raise CompileError("syntax error: unexpected end of file", source.pos(len(lines), 1)) from None
    try:
        return ToAst(source).transform(tree)
    except VisitError as e:
        if isinstance(e.orig_exc, CompileError):
            raise e.orig_exc from None
        raise


def _describe(tok):
    if tok.type in ("IDENTIFIER", "TYPE_IDENTIFIER", "INTEGER", "STRING"):
        return f"'{tok.value}'"
    return f"'{tok.value}'" if tok.value else _TOKEN_NAMES.get(tok.type, tok.type)
