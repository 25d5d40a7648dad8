"""The P4 abstract syntax tree built by the parser and annotated by the checker.

Every node has ``pos`` (a diagnostics.Pos). Expressions get ``type`` (a types.Type) and names get
``ref`` (the declaration they resolve to) from the checker.
"""


def _node(name, fields, base=None):
    """Declare a small node class with the given field names (plus pos, type, ref)."""
    base = base or Node

    def __init__(self, *args, pos=None, **kw):
        for f, a in zip(fields, args):
            setattr(self, f, a)
        for f in fields[len(args):]:
            setattr(self, f, kw.pop(f, None))
        if kw:
            raise TypeError(f"{name}: unknown fields {sorted(kw)}")
        self.pos = pos
        self.type = None
        self.ref = None

    cls = type(name, (base,), {"__init__": __init__, "_fields": tuple(fields)})
    return cls


class Node:
    _fields: tuple[str, ...] = ()

    def __repr__(self):
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__name__}({inner})"


class Expr(Node):
    pass


class Stmt(Node):
    pass


# ---- type references (syntax; the checker turns them into types.Type)
BitTypeRef = _node("BitTypeRef", ["width", "signed"])          # width: Expr
BoolTypeRef = _node("BoolTypeRef", [])
ErrorTypeRef = _node("ErrorTypeRef", [])
StringTypeRef = _node("StringTypeRef", [])
VoidTypeRef = _node("VoidTypeRef", [])
InfIntTypeRef = _node("InfIntTypeRef", [])
VarbitTypeRef = _node("VarbitTypeRef", ["width"])
NamedTypeRef = _node("NamedTypeRef", ["name", "args"])       # args: list of type refs or None
StackTypeRef = _node("StackTypeRef", ["elem", "size"])
TupleTypeRef = _node("TupleTypeRef", ["args"])

# ---- expressions
IntLit = _node("IntLit", ["value", "width", "signed"], Expr)  # width None: arbitrary precision
BoolLit = _node("BoolLit", ["value"], Expr)
StrLit = _node("StrLit", ["value"], Expr)
Name = _node("Name", ["name"], Expr)
TypeMember = _node("TypeMember", ["tname", "member"], Expr)    # Enum.X, error.X
Member = _node("Member", ["expr", "member"], Expr)
Index = _node("Index", ["expr", "index"], Expr)
Slice = _node("Slice", ["expr", "hi", "lo"], Expr)
Unary = _node("Unary", ["op", "expr"], Expr)                   # '!', '~', '-'
Binary = _node("Binary", ["op", "left", "right"], Expr)
Cond = _node("Cond", ["cond", "then", "els"], Expr)
Cast = _node("Cast", ["tref", "expr"], Expr)
Call = _node("Call", ["func", "type_args", "args"], Expr)      # args: list of Arg
CtorCall = _node("CtorCall", ["tname", "args"], Expr)
ListExpr = _node("ListExpr", ["items"], Expr)
Mask = _node("Mask", ["value", "mask"], Expr)
Range = _node("Range", ["lo", "hi"], Expr)
Default = _node("Default", [], Expr)
DontCare = _node("DontCare", [], Expr)
Arg = _node("Arg", ["name", "expr"])

# ---- statements
Assign = _node("Assign", ["lhs", "rhs"], Stmt)
CallStmt = _node("CallStmt", ["call"], Stmt)
If = _node("If", ["cond", "then", "els"], Stmt)
Block = _node("Block", ["stmts"], Stmt)
VarDecl = _node("VarDecl", ["tref", "name", "init"], Stmt)
ConstDecl = _node("ConstDecl", ["tref", "name", "value", "annos"], Stmt)
Exit = _node("Exit", [], Stmt)
Return = _node("Return", ["expr"], Stmt)
Empty = _node("Empty", [], Stmt)
Switch = _node("Switch", ["expr", "cases"], Stmt)               # cases: list of SwitchCase
SwitchCase = _node("SwitchCase", ["label", "body"])            # label: name str or None=default

# ---- declarations
Annotation = _node("Annotation", ["name", "args"])
Field = _node("Field", ["tref", "name", "annos"])
HeaderDecl = _node("HeaderDecl", ["name", "fields", "annos"])
StructDecl = _node("StructDecl", ["name", "fields", "annos"])
UnionDecl = _node("UnionDecl", ["name", "fields", "annos"])
TypedefDecl = _node("TypedefDecl", ["tref", "name", "annos"])
EnumDecl = _node("EnumDecl", ["name", "underlying", "members", "annos"])  # members: [(name, Expr|None, pos)]
ErrorDecl = _node("ErrorDecl", ["members"])
MatchKindDecl = _node("MatchKindDecl", ["members"])
Param = _node("Param", ["direction", "tref", "name", "default", "annos"])
ExternMethod = _node("ExternMethod", ["ret", "name", "params", "annos"])
ExternObj = _node("ExternObj", ["name", "methods", "annos"])
ExternFunc = _node("ExternFunc", ["ret", "name", "params", "annos"])
TypeDecl = _node("TypeDecl", ["kind", "name", "params"])       # parser/control/package type
Instance = _node("Instance", ["tref", "args", "name", "annos"])
ActionDecl = _node("ActionDecl", ["name", "params", "body", "annos"])
FunctionDecl = _node("FunctionDecl", ["ret", "name", "params", "body", "annos"])
ParserState = _node("ParserState", ["name", "stmts", "transition", "annos"])
TransitionDirect = _node("TransitionDirect", ["state"])
TransitionSelect = _node("TransitionSelect", ["keys", "cases"])  # cases: [SelectCase]
SelectCase = _node("SelectCase", ["keyset", "state"])           # keyset: list of Expr
ParserDecl = _node("ParserDecl", ["name", "params", "locals", "states", "annos"])
KeyElem = _node("KeyElem", ["expr", "match_kind", "annos"])
ActionRef = _node("ActionRef", ["name", "args", "annos"])
Entry = _node("Entry", ["keyset", "action", "priority", "annos"])
TableProp = _node("TableProp", ["name", "value", "const", "annos"])
TableDecl = _node("TableDecl", ["name", "props", "annos"])
ControlDecl = _node("ControlDecl", ["name", "params", "locals", "body", "annos"])
Program = _node("Program", ["decls"])


def walk(e):
    """Every node under ``e`` (``e`` included): the checker and backend look for table applies in expressions."""
    stack = [e]
    while stack:
        n = stack.pop()
        yield n
        for f in getattr(n, "_fields", ()):
            v = getattr(n, f, None)
            if isinstance(v, Node):
                stack.append(v)
            elif isinstance(v, list):
                stack.extend(x for x in v if isinstance(x, Node))
