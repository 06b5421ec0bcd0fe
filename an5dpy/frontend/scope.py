"""Where things are in the AST: the scop pragmas and the declarations visible at the scop."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

from pycparser import c_ast

_SCOP = re.compile(r"^\s*scop\b")
_ENDSCOP = re.compile(r"^\s*endscop\b")
_INDEXED_CHILD = re.compile(r"^(\w+)\[(\d+)\]$")


@dataclass(frozen=True)
class Link:
    """One step of the path from the root to a node: ``parent.<field>[index]``."""

    parent: c_ast.Node
    field: str
    index: int | None
    up: "Link | None"

    def ancestors(self) -> Iterator["Link"]:
        link: Link | None = self
        while link is not None:
            yield link
            link = link.up


def walk(root: c_ast.Node) -> Iterator[c_ast.Node]:
    """Pre-order traversal (iterative, so deep expressions cannot exhaust the stack)."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(child for _, child in reversed(node.children()))


# Statements hold pragmas; expressions and declarations never do, so the pragma search
# need not descend into them (they are most of a stencil file's nodes).
_STATEMENT_HOLDERS = (c_ast.FileAST, c_ast.FuncDef, c_ast.Compound, c_ast.For, c_ast.While,
                      c_ast.DoWhile, c_ast.If, c_ast.Switch, c_ast.Case, c_ast.Default,
                      c_ast.Label)


def walk_statements_with_links(root: c_ast.Node) -> Iterator[tuple[c_ast.Node, Link | None]]:
    """Pre-order traversal of statements, each with the link to its parent."""
    stack: list[tuple[c_ast.Node, Link | None]] = [(root, None)]
    while stack:
        node, link = stack.pop()
        yield node, link
        if not isinstance(node, _STATEMENT_HOLDERS):
            continue
        children = []
        for name, child in node.children():
            m = _INDEXED_CHILD.match(name)
            field, index = (m.group(1), int(m.group(2))) if m else (name, None)
            children.append((child, Link(node, field, index, link)))
        stack.extend(reversed(children))


def is_scop_pragma(node: c_ast.Node) -> bool:
    return isinstance(node, c_ast.Pragma) and bool(_SCOP.match(node.string or ""))


def is_endscop_pragma(node: c_ast.Node) -> bool:
    return isinstance(node, c_ast.Pragma) and bool(_ENDSCOP.match(node.string or ""))


@dataclass(frozen=True)
class PragmaSite:
    pragma: c_ast.Pragma
    link: Link | None  # link to the block that holds it


def find_scop_pragmas(ast: c_ast.FileAST) -> tuple[list[PragmaSite], list[PragmaSite]]:
    starts, ends = [], []
    for node, link in walk_statements_with_links(ast):
        if is_scop_pragma(node):
            starts.append(PragmaSite(node, link))
        elif is_endscop_pragma(node):
            ends.append(PragmaSite(node, link))
    return starts, ends


# --------------------------------------------------------------------------- declarations


@dataclass(frozen=True, eq=False)
class Declaration:
    """What a name refers to at the scop.

    ``kind``: 'global', 'parameter' or 'local' for a Decl node; 'enumerator' for an
    enumeration constant.
    """

    name: str
    node: c_ast.Node
    kind: str


def visible_declarations(site_link: Link) -> dict[str, Declaration]:
    """Names visible at the position ``site_link`` points to, innermost declaration winning.

    Walks the path from the root down: file-scope declarations before the function, the
    function's parameters, then each enclosing block's declarations before the path.
    """
    path = list(site_link.ancestors())[::-1]  # root first
    visible: dict[str, Declaration] = {}
    for link in path:
        parent = link.parent
        if isinstance(parent, c_ast.FileAST) and link.index is not None:
            for item in parent.ext[:link.index]:
                _declare_all(visible, item, "global")
        elif isinstance(parent, c_ast.FuncDef) and link.field == "body":
            for param in _function_parameters(parent):
                _declare(visible, param, "parameter")
        elif isinstance(parent, c_ast.Compound) and link.index is not None:
            for item in (parent.block_items or [])[:link.index]:
                _declare_all(visible, item, "local")
        elif isinstance(parent, c_ast.For) and link.field == "stmt":
            if isinstance(parent.init, c_ast.DeclList):
                for decl in parent.init.decls:
                    _declare(visible, decl, "local")
    return visible


def enclosing_function(site_link: Link) -> c_ast.FuncDef | None:
    for link in site_link.ancestors():
        if isinstance(link.parent, c_ast.FuncDef):
            return link.parent
    return None


def _function_parameters(func: c_ast.FuncDef) -> list[c_ast.Decl]:
    decl_type = func.decl.type
    while decl_type is not None and not isinstance(decl_type, c_ast.FuncDecl):
        decl_type = getattr(decl_type, "type", None)  # a function returning a pointer
    params = getattr(decl_type, "args", None)
    if params is None:
        return []
    return [p for p in params.params if isinstance(p, c_ast.Decl) and p.name]


def _declare_all(visible: dict[str, Declaration], item: c_ast.Node, kind: str) -> None:
    if isinstance(item, c_ast.Decl):
        _declare(visible, item, kind)
        for enumerator in _enumerators(item.type):
            visible[enumerator.name] = Declaration(enumerator.name, enumerator, "enumerator")
    elif isinstance(item, c_ast.DeclList):
        for decl in item.decls:
            _declare_all(visible, decl, kind)


def _declare(visible: dict[str, Declaration], decl: c_ast.Decl, kind: str) -> None:
    if decl.name:
        visible[decl.name] = Declaration(decl.name, decl, kind)


def _enumerators(type_node: c_ast.Node) -> list[c_ast.Enumerator]:
    while isinstance(type_node, (c_ast.TypeDecl, c_ast.PtrDecl, c_ast.ArrayDecl)):
        type_node = type_node.type
    if isinstance(type_node, c_ast.Enum) and type_node.values is not None:
        return list(type_node.values.enumerators)
    return []


def written_names(root: c_ast.Node) -> frozenset[str]:
    """Variables that ``root`` may modify: assigned, incremented, or whose address escapes."""
    names = set()
    for node in walk(root):
        target = None
        if isinstance(node, c_ast.Assignment):
            target = node.lvalue
        elif isinstance(node, c_ast.UnaryOp) and node.op in ("++", "--", "p++", "p--", "&"):
            target = node.expr
        if isinstance(target, c_ast.ID):
            names.add(target.name)
    return frozenset(names)


def declaration_is_const(decl: c_ast.Decl) -> bool:
    return "const" in (decl.quals or [])
