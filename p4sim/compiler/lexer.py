"""Post-lexer: classifies identifiers as type names and angle brackets as type brackets.

P4's grammar is not LALR(1) on its own: ``a < b`` vs ``f<bit<8>>(x)`` and ``>>`` vs two closing
brackets need to know which identifiers name types (p4c's lexer asks its symbol table). We find
the type names declared in the program with a pre-scan, then mark ``<``/``>`` that open/close
type arguments as TLT/TGT and merge adjacent ``>`` ``>`` outside type arguments into SHR.
"""
import re
from collections.abc import Iterator

from lark import Token

_TYPE_DECL = re.compile(
    r"\b(?:header|struct|header_union|control|parser|package)\s+([A-Za-z_]\w*)"
    r"|\bextern\s+([A-Za-z_]\w*)\s*[<{]"
    r"|\benum\s+(?:bit\s*<\s*\d+\s*>\s*)?([A-Za-z_]\w*)\s*\{"
    r"|\btypedef\b[^;]*?\b([A-Za-z_]\w*)\s*;")
_TYPE_START = {"TYPE_IDENTIFIER", "BIT", "INT", "BOOL", "VARBIT", "ERROR", "STRING", "TUPLE"}


def scan_type_names(text: str) -> set[str]:
    """Names declared as types anywhere in the (preprocessed) text."""
    names = set()
    for m in _TYPE_DECL.finditer(text):
        n = next(g for g in m.groups() if g)
        names.add(n)
    names.discard("void")
    # v1model externs outside the subset still parse as types, so the checker can name them
    names.update(("meter", "direct_meter", "action_profile", "action_selector", "Checksum16", "value_set"))
    return names


class TypeNamePostLex:
    """lark post-lexer implementing the classification described in the module docstring."""

    always_accept = ("IDENTIFIER",)

    def __init__(self) -> None:
        self.type_names: set[str] = set()

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        toks = []
        for tok in stream:
            if tok.type == "IDENTIFIER" and (tok.value in self.type_names or tok.value.startswith("Tp_")):
                tok = Token.new_borrow_pos("TYPE_IDENTIFIER", tok.value, tok)
            toks.append(tok)
        depth = 0
        i, n = 0, len(toks)
        while i < n:
            tok = toks[i]
            prev = toks[i - 1] if i else None
            if tok.type == "LT" and prev is not None:
                if prev.type in ("TYPE_IDENTIFIER", "BIT", "INT", "VARBIT", "TUPLE") or (
                        prev.type == "IDENTIFIER" and i + 1 < n and toks[i + 1].type in _TYPE_START):
                    depth += 1
                    tok = Token.new_borrow_pos("TLT", "<", tok)
            elif tok.type == "GT":
                if depth > 0:
                    depth -= 1
                    tok = Token.new_borrow_pos("TGT", ">", tok)
                elif i + 1 < n and toks[i + 1].type == "GT" and toks[i + 1].start_pos == tok.end_pos:
                    yield Token.new_borrow_pos("SHR", ">>", tok)
                    i += 2
                    continue
            yield tok
            i += 1
