"""C types of declarations, with typedefs resolved (LP64 data model)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Union

from pycparser import c_ast

from .. import ir
from .preprocess import FAKE_LIBC_DIR


@dataclass(frozen=True)
class ScalarType:
    name: str  # canonical spelling: 'float', 'unsigned long', 'long double', '_Bool', 'void'


@dataclass(frozen=True, eq=False)
class ArrayType:
    element: "CType"
    size: c_ast.Node | None  # None for ``[]``


@dataclass(frozen=True)
class PointerType:
    target: "CType"


@dataclass(frozen=True)
class OtherType:
    description: str  # 'struct foo', 'function', '_Complex double', ...


CType = Union[ScalarType, ArrayType, PointerType, OtherType]

#: Standard typedef names with their real LP64 meaning. The fake-libc stand-ins declare
#: most of them as plain ``int``, which would give parameters the wrong C type.
STANDARD_TYPEDEFS: Mapping[str, str] = {
    "bool": "_Bool", "size_t": "unsigned long", "ssize_t": "long", "ptrdiff_t": "long",
    "intptr_t": "long", "uintptr_t": "unsigned long", "int8_t": "signed char",
    "uint8_t": "unsigned char", "int16_t": "short", "uint16_t": "unsigned short",
    "int32_t": "int", "uint32_t": "unsigned int", "int64_t": "long", "uint64_t": "unsigned long",
    "intmax_t": "long", "uintmax_t": "unsigned long", "float_t": "float", "double_t": "double",
}

ARITHMETIC_TYPES = ir.FLOAT_TYPES + ir.INT_TYPES + ir.PROMOTED_TO_INT


def is_system_file(path: str | None) -> bool:
    return bool(path) and (path.startswith(FAKE_LIBC_DIR) or path.startswith("/usr/"))


def canonical_scalar(names: list[str]) -> str | None:
    """The canonical name of a basic type spelled with ``names``, or None if not basic."""
    words = list(names)
    unsigned = "unsigned" in words
    signed = "signed" in words
    longs = words.count("long")
    rest = [w for w in words if w not in ("unsigned", "signed", "long", "int")]
    if unsigned and signed:
        return None
    if rest == ["void"] and not (unsigned or signed or longs):
        return "void"
    if rest == ["_Bool"] and not (unsigned or signed or longs):
        return "_Bool"
    if rest == ["float"] and not (unsigned or signed or longs) and "int" not in words:
        return "float"
    if rest == ["double"] and not (unsigned or signed) and "int" not in words and longs <= 1:
        return "long double" if longs else "double"
    if rest == ["char"] and not longs and "int" not in words:
        return "unsigned char" if unsigned else "signed char" if signed else "char"
    if rest == ["short"] and not longs:
        return "unsigned short" if unsigned else "short"
    if rest:
        return None
    base = {0: "int", 1: "long", 2: "long long"}.get(longs)
    if base is None:
        return None
    return f"unsigned {base}" if unsigned else base


class TypeResolver:
    """Resolves pycparser type nodes through the file's typedefs."""

    def __init__(self, ast: c_ast.FileAST):
        self.typedefs: dict[str, c_ast.Typedef] = {}
        stack: list[c_ast.Node] = [ast]
        while stack:
            node = stack.pop()
            if isinstance(node, c_ast.Typedef):
                self.typedefs.setdefault(node.name, node)
            elif isinstance(node, (c_ast.FileAST, c_ast.FuncDef, c_ast.Compound)):
                stack.extend(child for _, child in reversed(node.children()))
        self._resolving: set[str] = set()

    def is_user_typedef(self, name: str) -> bool:
        """True for a typedef name that a stand-alone compile of the scop would not know."""
        typedef = self.typedefs.get(name)
        if typedef is None:
            return False
        from_system = is_system_file(typedef.coord.file if typedef.coord else None)
        return not (from_system and name in STANDARD_TYPEDEFS)

    def resolve(self, node: c_ast.Node) -> CType:
        if isinstance(node, (c_ast.Decl, c_ast.Typename, c_ast.Typedef)):
            return self.resolve(node.type)
        if isinstance(node, c_ast.PtrDecl):
            return PointerType(self.resolve(node.type))
        if isinstance(node, c_ast.ArrayDecl):
            return ArrayType(self.resolve(node.type), node.dim)
        if isinstance(node, c_ast.FuncDecl):
            return OtherType("function")
        if isinstance(node, c_ast.TypeDecl):
            return self._resolve_named(node.type)
        return OtherType(type(node).__name__)

    def _resolve_named(self, spec: c_ast.Node) -> CType:
        if isinstance(spec, c_ast.IdentifierType):
            names = list(spec.names)
            if len(names) == 1 and names[0] in self.typedefs:
                return self._resolve_typedef(names[0])
            basic = canonical_scalar(names)
            return ScalarType(basic) if basic else OtherType(" ".join(names))
        if isinstance(spec, c_ast.Struct):
            return OtherType(f"struct {spec.name or ''}".strip())
        if isinstance(spec, c_ast.Union):
            return OtherType(f"union {spec.name or ''}".strip())
        if isinstance(spec, c_ast.Enum):
            return OtherType(f"enum {spec.name or ''}".strip())
        return OtherType(type(spec).__name__)

    def _resolve_typedef(self, name: str) -> CType:
        typedef = self.typedefs[name]
        if name in STANDARD_TYPEDEFS and is_system_file(typedef.coord.file
                                                          if typedef.coord else None):
            return ScalarType(STANDARD_TYPEDEFS[name])
        if name in self._resolving:  # a malformed self-referential typedef
            return OtherType(name)
        self._resolving.add(name)
        try:
            return self.resolve(typedef.type)
        finally:
            self._resolving.discard(name)


def describe(ctype: CType) -> str:
    """A short human spelling for messages: 'float', 'pointer to float', ..."""
    if isinstance(ctype, ScalarType):
        return ctype.name
    if isinstance(ctype, PointerType):
        return f"pointer to {describe(ctype.target)}"
    if isinstance(ctype, ArrayType):
        return f"array of {describe(ctype.element)}"
    return ctype.description


def is_arithmetic(ctype: CType) -> bool:
    return isinstance(ctype, ScalarType) and ctype.name in ARITHMETIC_TYPES
