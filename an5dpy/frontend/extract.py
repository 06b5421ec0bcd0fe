"""From the parsed file to a :class:`StencilProgram`: the scop, its time loop, the spatial
loop nests inside it and their statements.

The time loop holds one perfectly nested spatial nest or several in sequence, all of the
same depth; each nest's innermost body holds one or more assignments. The arrays they
write are the *fields* (each written by one statement, time-buffered or updated in place,
all of the same extents); every other array is read-only.

Everything the user can get wrong is reported as :class:`UnsupportedInput` at the
construct's position in the user's file, naming the construct and saying why an5dpy cannot
block it. Properties that need the polyhedral model (which level of a field a read sees,
non-constant offsets, writes away from the loop point) are left to the analysis stage: this
stage keeps what it needs, the subscripts as affine forms.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Sequence

from pycparser import c_ast

from .. import ir
from ..errors import UnsupportedInput
from ..ir import Access, Affine, ArrayDecl, Assign, Coord, Expr, Loop, Param, Scalar
from ..ir import StencilProgram
from . import literals
from .affine import NotAffine, affine_of
from .ctype import (ArrayType, CType, OtherType, PointerType, ScalarType, TypeResolver,
                    describe, is_arithmetic)
from .expr import build_expr, convert
from .region import locate_scop, scop_region, statements_of
from .reserved import is_reserved, named_nodes, reserved_error
from .scope import (Declaration, declaration_is_const, enclosing_function,
                    visible_declarations, walk, written_names)
from .source import Locator, PreprocessedLine
from .text import c_text

# Prefix operators to which pycparser gives the operand's position.
_PREFIX_OPERATORS = frozenset({"-", "+", "!", "~", "*", "&", "++", "--"})

_NEST_SHAPE = ("an5dpy blocks 2D and 3D stencils: a time loop around 2 or 3 perfectly "
               "nested spatial loops")
_LOOP_FORM = "for (v = lower; v < upper; v++)"
_BODY_FORM = ("each statement of the innermost body must be an assignment "
              "'A[(t+1)%2][i][j] = expression;'")


def extract_program(ast: c_ast.FileAST, locator: Locator, lines: Sequence[PreprocessedLine],
                    display_file: str,
                    defines: Sequence[tuple[str, str | None]] = ()) -> StencilProgram:
    start, end, items = locate_scop(ast, locator, display_file)
    types = TypeResolver(ast)
    function = enclosing_function(start.link)
    visible = visible_declarations(start.link)
    reader = _ScopReader(locator, types, visible, function)
    reader.reject_reserved_names(ast)
    reader.reject_user_typedefs(items)
    time_loop, nests = reader.loop_nests(items)
    return StencilProgram(
        filename=display_file,
        arrays=tuple(reader.arrays.values()),
        params=reader.params(),
        time_loop=time_loop,
        nests=nests,
        scop=scop_region(start, end, locator, lines),
        defines=tuple(defines),
    )


# --------------------------------------------------------------------------- loops


@dataclass(frozen=True)
class _NestShape:
    """One spatial loop nest as written: its loop headers, outermost first, and the
    statements of its innermost body."""

    headers: tuple["_Header", ...]
    body: tuple[c_ast.Node, ...]


@dataclass(frozen=True)
class _Header:
    node: c_ast.For
    var: str
    lower: c_ast.Node
    upper: c_ast.Node
    inclusive: bool
    declared_in_init: bool
    var_type: str  # the loop variable's integer C type


def _is_one(node: c_ast.Node | None) -> bool:
    if not isinstance(node, c_ast.Constant) or literals.is_floating_spelling(node.value):
        return False
    try:
        return literals.integer_literal(node.value).value == 1
    except literals.LiteralError:
        return False


def _is_var(node: c_ast.Node | None, var: str) -> bool:
    return isinstance(node, c_ast.ID) and node.name == var


def _is_unit_increment(step: c_ast.Node, var: str) -> bool:
    if isinstance(step, c_ast.UnaryOp):
        return step.op in ("++", "p++") and _is_var(step.expr, var)
    if isinstance(step, c_ast.Assignment) and _is_var(step.lvalue, var):
        if step.op == "+=":
            return _is_one(step.rvalue)
        value = step.rvalue
        if step.op == "=" and isinstance(value, c_ast.BinaryOp) and value.op == "+":
            return (_is_var(value.left, var) and _is_one(value.right)) or \
                   (_is_one(value.left) and _is_var(value.right, var))
    return False


class _ScopReader:
    """Reads the loop nest; accumulates the arrays and parameters it meets, in order."""

    def __init__(self, locator: Locator, types: TypeResolver,
                 visible: dict[str, Declaration], function: c_ast.FuncDef):
        self.locator = locator
        self.types = types
        self.visible = visible
        self.function = function
        self.arrays: dict[str, ArrayDecl] = {}
        self._param_decls: dict[str, Declaration] = {}
        self._param_types: dict[str, str] = {}  # integer parameters of bounds and subscripts
        self._deferred_params: list[Declaration] = []
        # the loop variables in scope: the time loop's and those of the nest being read
        self.loop_vars: list[str] = []
        self._nest_vars: list[tuple[str, ...]] = []  # each nest's loop variables
        self._loop_lines: dict[str, Coord | None] = {}  # where each loop variable is first a loop's
        self.time_var = ""
        self.space_dims = 0
        # the arrays some statement writes, each with the statement that writes it
        self._fields: dict[str, c_ast.Node] = {}
        # in-place fields whose outermost extent is open, until another field gives it
        self._open_fields: list[str] = []
        # read-only arrays whose outermost extent is open, in order of first read, each
        # with that read's position
        self._open_outer: dict[str, Coord | None] = {}

    def coord(self, node: c_ast.Node | None) -> Coord | None:
        if node is None:
            return None
        if isinstance(node, c_ast.UnaryOp) and node.op in _PREFIX_OPERATORS \
                and node.expr is not None:
            return self.locator.prefix_operator_coord(node.coord, node.op)
        return self.locator.coord(node.coord)

    def declaration_coord(self, decl: c_ast.Node) -> Coord | None:
        """Where a declaration names its identifier (pycparser puts a pointer declarator
        at its '*')."""
        node = getattr(decl, "type", None)
        while isinstance(node, (c_ast.PtrDecl, c_ast.ArrayDecl, c_ast.FuncDecl)):
            node = node.type
        if isinstance(node, c_ast.TypeDecl) and node.coord is not None:
            return self.locator.coord(node.coord)
        return self.coord(decl)

    # ---------------------------------------------------------------- nest

    def reject_reserved_names(self, root: c_ast.Node) -> None:
        """Refuse the first identifier the file uses or declares with the generated code's
        prefix (:mod:`an5dpy.frontend.reserved`)."""
        for name, node in named_nodes(root):
            if is_reserved(name):
                coord = (self.declaration_coord(node) if isinstance(node, c_ast.Decl)
                         else self.coord(node))
                raise reserved_error(name, coord)

    def reject_user_typedefs(self, items: Sequence[c_ast.Node]) -> None:
        """The gcc oracle compiles the scop's text on its own, without the file's typedefs."""
        if not any(self.types.is_user_typedef(name) for name in self.types.typedefs):
            return
        for item in items:
            for node in walk(item):
                if isinstance(node, c_ast.IdentifierType) and len(node.names) == 1 \
                        and self.types.is_user_typedef(node.names[0]):
                    name = node.names[0]
                    resolved = describe(self.types.resolve(self.types.typedefs[name]))
                    raise UnsupportedInput(
                        f"typedef name '{name}' inside the scop: spell the type ('{resolved}') "
                        f"or use a macro (the loop nest is compiled on its own for "
                        f"verification, without the file's typedefs)", self.coord(node))

    def loop_nests(self, items: Sequence[c_ast.Node]) -> tuple[Loop, tuple[ir.LoopNest, ...]]:
        """The time loop and the spatial loop nests of its body, each with its statements.

        The reading goes in passes, so that each error is the first one in its kind:
        the loop headers of every nest (their shape, then equal depths), the bounds, the
        statements' targets (which arrays are fields: :meth:`_collect_fields`), then the
        statements themselves, in source order; last the outermost extents that
        declarations leave open, which follow from the statements' accesses."""
        first = items[0]
        if not isinstance(first, c_ast.For):
            raise UnsupportedInput(f"the scop must hold a for loop (the time loop), not "
                                   f"'{c_text(first)}'", self.coord(first))
        if len(items) > 1:
            raise UnsupportedInput("more than one statement in the scop: it must hold exactly "
                                   "one time loop (several spatial loop nests go inside it)",
                                   self.coord(items[1]))
        time_header = self._header(first)
        self.time_var = time_header.var
        shapes = [self._nest_shape(top) for top in self._nest_tops(first, time_header)]
        self.space_dims = self._common_depth(first, shapes)
        for shape in shapes:
            self._nest_vars.append(tuple(h.var for h in shape.headers))
            for header in shape.headers:
                self._loop_lines.setdefault(header.var, self.coord(header.node))
        self.loop_vars = self.all_loop_vars
        time_loop = self._loop(time_header)
        loops = []
        for shape, names in zip(shapes, self._nest_vars):
            self.loop_vars = [self.time_var, *names]
            loops.append(tuple(self._loop(h) for h in shape.headers))
        self._collect_fields([s for shape in shapes for s in shape.body])
        nests = []
        for shape, names, nest_loops in zip(shapes, self._nest_vars, loops):
            self.loop_vars = [self.time_var, *names]
            statements = tuple(self._statement(s) for s in shape.body)
            nests.append(ir.LoopNest(nest_loops, statements, nest_loops[0].coord))
        if self._open_fields:  # no field declares the outermost extent
            self._close_open_field_extents(self._inferred_outer_extent(nests), inferred=True)
        for statement in (s for nest in nests for s in nest.statements):
            self._close_open_extents(statement.target, statement.value)
        self._require_closed_extents()
        return time_loop, tuple(nests)

    @property
    def all_loop_vars(self) -> list[str]:
        """The time loop's variable and every nest's, each once, in source order."""
        return list(dict.fromkeys([self.time_var, *(v for n in self._nest_vars for v in n)]))

    def _nest_tops(self, time_node: c_ast.For, time_header: _Header) -> list[c_ast.For]:
        """The outermost loops of the time loop's body: one nest, or several in sequence
        (FDTD's sub-steps), and nothing else beside them."""
        body = statements_of([time_node.stmt])
        if not body:
            raise UnsupportedInput(f"empty body of loop '{time_header.var}'",
                                   self.coord(time_node))
        loops = [s for s in body if isinstance(s, c_ast.For)]
        if not loops:
            raise UnsupportedInput(f"only 0 spatial loops inside the time loop ({_NEST_SHAPE})",
                                   self.coord(time_node))
        offender = next((s for s in body if not isinstance(s, c_ast.For)), None)
        if offender is not None:
            raise UnsupportedInput(
                f"imperfect loop nest: '{c_text(offender)}' beside the spatial loop nest over "
                f"'{_loop_var_name(loops[0])}' in the body of time loop '{time_header.var}' "
                f"(the time loop may hold several spatial loop nests in sequence, but every "
                f"statement must be in the innermost body of one)", self.coord(offender))
        return loops

    def _nest_shape(self, top: c_ast.For) -> _NestShape:
        """The headers of one perfectly nested spatial nest and its innermost statements.
        Each nest is its own scope: its loop variables may repeat another nest's."""
        self.loop_vars = [self.time_var]
        headers = [self._header(top)]
        node = top
        while True:
            body = statements_of([node.stmt])
            if not body:
                raise UnsupportedInput(f"empty body of loop '{headers[-1].var}'",
                                       self.coord(node))
            loops = [s for s in body if isinstance(s, c_ast.For)]
            if not loops:
                return _NestShape(tuple(headers), tuple(body))
            if len(body) > 1:
                offender = next((s for s in body if not isinstance(s, c_ast.For)), loops[-1])
                what = "a second loop" if isinstance(offender, c_ast.For) \
                    else f"'{c_text(offender)}'"
                raise UnsupportedInput(f"imperfect loop nest: {what} beside the loop over "
                                       f"'{_loop_var_name(loops[0])}' (only perfectly nested "
                                       f"loops can be blocked)", self.coord(offender))
            node = loops[0]
            headers.append(self._header(node))
            if len(headers) > 3:
                raise UnsupportedInput(f"more than 3 spatial loops ({_NEST_SHAPE})",
                                       self.coord(node))

    def _common_depth(self, time_node: c_ast.For, shapes: Sequence[_NestShape]) -> int:
        """The number of spatial loops, the same in every nest."""
        deepest = max(shapes, key=lambda shape: len(shape.headers))
        depth = len(deepest.headers)
        for shape in shapes:
            count = len(shape.headers)
            if count != depth:
                other = deepest.headers[0]
                raise UnsupportedInput(
                    f"the loop nest over '{shape.headers[0].var}' has {count} spatial "
                    f"loop{'s' * (count != 1)} but the nest over '{other.var}' (line "
                    f"{self.coord(other.node).line}) has {depth}: every nest of a time step "
                    f"must have the same depth, one loop per dimension of the fields (a "
                    f"boundary update such as a loop over one row cannot be blocked)",
                    self.coord(shape.headers[0].node))
        if depth < 2:
            raise UnsupportedInput(f"only {depth} spatial loop{'s' * (depth != 1)} inside "
                                   f"the time loop ({_NEST_SHAPE})", self.coord(time_node))
        return depth

    def _header(self, node: c_ast.For) -> _Header:
        var, var_type, lower, declared = self._init(node)
        if var in self.loop_vars:
            raise UnsupportedInput(f"loop variable '{var}' is already the variable of an "
                                   f"enclosing loop", self.coord(node))
        self.loop_vars.append(var)
        upper, inclusive = self._condition(node, var)
        step = node.next
        if step is None:
            raise UnsupportedInput(f"loop over '{var}' has no increment (write {_LOOP_FORM})",
                                   self.coord(node))
        if not _is_unit_increment(step, var):
            raise UnsupportedInput(f"non-unit loop stride: '{c_text(step)}' (only loops that "
                                   f"step by +1, like '{var}++', can be blocked)",
                                   self.coord(step))
        return _Header(node, var, lower, upper, inclusive, declared, var_type)

    def _init(self, node: c_ast.For) -> tuple[str, str, c_ast.Node, bool]:
        init = node.init
        if isinstance(init, c_ast.Assignment) and init.op == "=" \
                and isinstance(init.lvalue, c_ast.ID):
            var = init.lvalue.name
            ctype = self._require_integer_loop_var(var, self.visible.get(var), init.lvalue)
            return var, ctype, init.rvalue, False
        if isinstance(init, c_ast.DeclList) and len(init.decls) == 1 \
                and init.decls[0].init is not None and init.decls[0].name:
            decl = init.decls[0]
            ctype = self._require_integer_loop_var(
                decl.name, Declaration(decl.name, decl, "local"), decl)
            return decl.name, ctype, decl.init, True
        if init is None:
            raise UnsupportedInput(f"loop without an initialiser (write {_LOOP_FORM})",
                                   self.coord(node))
        raise UnsupportedInput(f"unsupported loop initialiser '{c_text(init)}' (write "
                               f"{_LOOP_FORM} or 'int v = lower')", self.coord(init))

    def _require_integer_loop_var(self, var: str, decl: Declaration | None,
                                  node: c_ast.Node) -> str:
        if decl is None:
            raise UnsupportedInput(f"undeclared identifier '{var}'", self.coord(node))
        ctype = self.types.resolve(decl.node) if decl.kind != "enumerator" else None
        if not (isinstance(ctype, ScalarType) and ctype.name in _INTEGER_NAMES):
            what = describe(ctype) if ctype is not None else "an enumeration constant"
            raise UnsupportedInput(f"loop variable '{var}' has type {what}; loop variables "
                                   f"must be integers", self.coord(node))
        return ctype.name

    def _condition(self, node: c_ast.For, var: str) -> tuple[c_ast.Node, bool]:
        cond = node.cond
        if isinstance(cond, c_ast.BinaryOp):
            if cond.op in ("<", "<=") and _is_var(cond.left, var):
                return cond.right, cond.op == "<="
            if cond.op in (">", ">=") and _is_var(cond.right, var):
                return cond.left, cond.op == ">="
        if cond is None:
            raise UnsupportedInput(f"loop over '{var}' has no condition (write {_LOOP_FORM})",
                                   self.coord(node))
        raise UnsupportedInput(f"loop condition '{c_text(cond)}' must compare '{var}' with "
                               f"'<' or '<=' against an upper bound (write {_LOOP_FORM})",
                               self.coord(cond))

    def _loop(self, header: _Header) -> Loop:
        lower = self._bound(header.lower, header.var)
        upper = self._bound(header.upper, header.var)
        for node, bound in ((header.lower, lower), (header.upper, upper)):
            values = [bound.const] + [c for _, c in bound.terms]
            if any(abs(v) > _INT_MAX for v in values):
                # gcc would wrap it into int (the loop variable) while we would not; and the
                # generated code indexes grids with int
                raise UnsupportedInput(f"loop bound '{c_text(node)}' does not fit in an int "
                                       f"(the generated code and the loop variable use int)",
                                       self.coord(node))
        self._check_start_fits(header, lower)
        if not header.inclusive:
            upper = upper - 1
        return Loop(var=header.var, lower=lower, upper=upper, coord=self.coord(header.node),
                    declared_in_init=header.declared_in_init, var_type=header.var_type)

    def _check_start_fits(self, header: _Header, lower: Affine) -> None:
        """``for (t = t0; ...)`` converts ``t0`` to the loop variable's type: where that
        type cannot hold every value of a parameter in the bound (an ``unsigned`` ``t0``,
        an ``int`` ``t``), C wraps the value around and the loop starts far below the
        bound (negative), outside every array. Signed overflow of the bound's own arithmetic is
        undefined behaviour and is not considered."""
        var_low, var_high = literals.int_range(header.var_type)
        types = {name: self._param_types[name] for name in lower.variables}
        if all(var_low <= literals.int_range(t)[0] and literals.int_range(t)[1] <= var_high
               for t in types.values()):
            return
        extreme = {}  # the parameter values that take the bound furthest up or down
        for direction in (1, -1):
            values = {n: literals.int_range(types[n])[(c * direction > 0)]
                      for n, c in lower.terms}
            extreme[direction] = (values, lower.evaluate(values))
        for values, start in extreme.values():
            width = var_high - var_low + 1
            wrapped = (start - var_low) % width + var_low
            if var_low <= start <= var_high or wrapped >= 0:
                # a wrap to a large positive start only shortens the loop
                continue
            given = ", ".join(f"{n} = {v} ({types[n]})" for n, v in values.items())
            raise UnsupportedInput(
                f"loop '{header.var}' of type {header.var_type} starts at "
                f"'{c_text(header.lower)}', a value its type cannot always hold: when {given}, "
                f"C converts it to {wrapped}, so '{header.var}' starts negative and the "
                f"loop's accesses fall outside the arrays whenever it runs; declare "
                f"'{header.var}' with a type that holds every value of the bound",
                self.coord(header.lower))

    def _bound(self, node: c_ast.Node, loop_var: str) -> Affine:
        def name(id_node: c_ast.ID) -> Affine:
            if id_node.name in self.loop_vars:
                raise UnsupportedInput(
                    f"bound '{c_text(node)}' of loop '{loop_var}' depends on the loop "
                    f"variable '{id_node.name}' (only rectangular loop nests can be blocked)",
                    self.coord(node))
            return self._integer_param(id_node, "loop bound")

        try:
            return affine_of(node, name, self.types)
        except NotAffine as exc:
            raise UnsupportedInput(self._not_affine_message(exc, f"loop bound '{c_text(node)}'",
                                                            "parameters and constants"),
                                   self.coord(node)) from None

    @staticmethod
    def _not_affine_message(exc: NotAffine, what: str, of: str) -> str:
        if exc.reason == "indirect":
            return (f"data-dependent (indirect) index: {what} reads '{c_text(exc.node)}' "
                    f"(it must be affine in {of})")
        if exc.reason == "not integer":
            return f"{what} is not an integer expression ('{c_text(exc.node)}')"
        return f"{what} is not affine (it must be a sum of {of}, each times a constant)"

    # ---------------------------------------------------------------- names

    def _scalar_declaration(self, id_node: c_ast.ID) -> tuple[Declaration, str]:
        """The declaration and arithmetic C type of a scalar the scop reads."""
        name = id_node.name
        decl = self.visible.get(name)
        coord = self.coord(id_node)
        if name in self._loop_lines and name not in self.loop_vars:
            where = self._loop_lines[name]
            raise UnsupportedInput(
                f"'{name}' is the variable of the loop at line {where.line if where else '?'}, "
                f"in another loop nest of the time step: here it holds that loop's last value "
                f"(a nest may use its own loop variables, the time loop's and parameters)",
                coord)
        if decl is None:
            raise UnsupportedInput(f"undeclared identifier '{name}'", coord)
        if decl.kind == "enumerator":
            raise UnsupportedInput(f"enumeration constant '{name}' in the scop is not "
                                   f"supported (use a macro or a const variable)", coord)
        ctype = self.types.resolve(decl.node)
        if isinstance(ctype, (ArrayType, PointerType)):
            kind = "array" if isinstance(ctype, ArrayType) else "pointer"
            raise UnsupportedInput(f"{kind} '{name}' used without subscripts", coord)
        if isinstance(ctype, OtherType) and ctype.description == "function":
            raise UnsupportedInput(f"function '{name}' used as a value", coord)
        if isinstance(ctype, ScalarType) and ctype.name == "long double":
            raise UnsupportedInput(f"'{name}' has type long double (GPUs have no long "
                                   f"double)", coord)
        if not is_arithmetic(ctype):
            raise UnsupportedInput(f"'{name}' has type {describe(ctype)}, not a number", coord)
        return decl, ctype.name

    def _record_param(self, decl: Declaration) -> None:
        self._param_decls.setdefault(decl.name, decl)

    def _integer_param(self, id_node: c_ast.ID, role: str) -> Affine:
        decl, ctype = self._scalar_declaration(id_node)
        if ctype not in _INTEGER_NAMES:
            raise UnsupportedInput(f"{role} uses '{id_node.name}' of type {ctype}; it must be "
                                   f"an integer", self.coord(id_node))
        self._record_param(decl)
        self._param_types[id_node.name] = ctype
        return Affine.var(id_node.name)

    # ---------------------------------------------------------------- statement

    def _collect_fields(self, statements: Sequence[c_ast.Node]) -> None:
        """Which arrays are fields, decided before any expression is read: those the
        statements write, each by one statement. Their declarations are read here, in
        the order of the first write (so the fields come first in ``arrays``)."""
        for node in statements:
            name, base = self._written_array(node)
            if name in self._fields:
                first = self.coord(self._fields[name])
                raise UnsupportedInput(
                    f"'{name}' is written by two statements (the first at line "
                    f"{first.line if first else '?'}); each field must be written by exactly "
                    f"one statement per time step", self.coord(node.lvalue))
            self._fields[name] = node
            self._array(name, base, self.coord(node.lvalue))
        declared = next((a for a in self.arrays.values()
                         if not a.read_only and a.name not in self._open_fields), None)
        if self._open_fields and declared is not None:
            self._close_open_field_extents(declared.extents[0], inferred=False)

    def _written_array(self, node: c_ast.Node) -> tuple[str, c_ast.ID]:
        """The name of the array a statement of the innermost body writes, and the name's
        node; the statement must be a plain assignment to an array element."""
        if not isinstance(node, c_ast.Assignment):
            raise UnsupportedInput(f"unsupported statement '{c_text(node)}' in the loop body "
                                   f"({_BODY_FORM})", self.coord(node))
        if node.op != "=":
            raise UnsupportedInput(f"compound assignment '{node.op}' is not supported (write "
                                   f"the update as a plain assignment: {_BODY_FORM})",
                                   self.coord(node))
        if not isinstance(node.lvalue, c_ast.ArrayRef):
            raise UnsupportedInput(f"the statement writes '{c_text(node.lvalue)}'; "
                                   f"{_BODY_FORM}", self.coord(node.lvalue))
        base = _subscript_base(node.lvalue)
        if not isinstance(base, c_ast.ID):
            raise UnsupportedInput(f"subscripted value '{c_text(base)}' is not a named array",
                                   self.coord(node.lvalue))
        return base.name, base

    def _statement(self, node: c_ast.Assignment) -> Assign:
        """One assignment (its form checked by :meth:`_collect_fields`), in the scope of
        its nest's loop variables."""
        target = self._access(node.lvalue)
        value = build_expr(node.rvalue, _ExprNames(self))
        value = convert(value, target.ctype)
        for decl in self._deferred_params:
            self._record_param(decl)
        return Assign(target=target, value=value, coord=self.coord(node))

    def _access(self, node: c_ast.ArrayRef) -> Access:
        base = _subscript_base(node)
        subscripts = _subscripts(node)
        coord = self.coord(node)
        if not isinstance(base, c_ast.ID):
            raise UnsupportedInput(f"subscripted value '{c_text(base)}' is not a named array",
                                   coord)
        name = base.name
        array = self._array(name, base, coord)
        if array.read_only:
            return self._read_only_access(array, subscripts, coord)
        if array.in_place:
            rank = len(array.extents) + (name in self._open_fields)
            if len(subscripts) != rank:
                raise UnsupportedInput(
                    f"'{name}' has {rank} dimensions (updated in place: {rank} spatial, no "
                    f"time buffer) but is subscripted with {len(subscripts)} "
                    f"ind{'ex' if len(subscripts) == 1 else 'ices'}", coord)
            indices = tuple(self._spatial_subscript(s) for s in subscripts)
            return Access(array.elem_type, coord, array=name, time=None, indices=indices,
                          modulus=1)
        rank = len(array.extents) + 1
        if len(subscripts) != rank:
            raise UnsupportedInput(f"'{name}' has {rank} dimensions (a time buffer and "
                                   f"{rank - 1} spatial) but is subscripted with "
                                   f"{len(subscripts)} indices", coord)
        time, modulus = self._time_subscript(subscripts[0])
        indices = tuple(self._spatial_subscript(s) for s in subscripts[1:])
        return Access(array.elem_type, coord, array=name, time=time, indices=indices,
                      modulus=modulus)

    def _time_subscript(self, node: c_ast.Node) -> tuple[Affine, int]:
        """``(t + c) % k`` (``t % k``, ``(c + t) % k``, ...) as the affine ``t + c`` and the
        modulus ``k``: the array rotates through ``k`` time buffers. Which ``c`` and ``k``
        an update may use is the analysis' rule (:mod:`an5dpy.analysis.stencil`)."""
        t = self.time_var
        bad = UnsupportedInput(f"time subscript '{c_text(node)}' must be ({t} + c) % k with "
                               f"constants c and k >= 2 (the array rotates through k time "
                               f"buffers: ({t} + 1) % 2 and {t} % 2 for double buffering)",
                               self.coord(node))
        if not (isinstance(node, c_ast.BinaryOp) and node.op == "%"
                and isinstance(node.right, c_ast.Constant)
                and not literals.is_floating_spelling(node.right.value)
                and node.right.type != "char"):
            raise bad
        try:
            modulus = literals.integer_literal(node.right.value).value
        except literals.LiteralError:
            raise bad from None
        if modulus < 2:
            raise bad

        def name(id_node: c_ast.ID) -> Affine:
            if id_node.name == t:
                return Affine.var(t)
            raise NotAffine(id_node, "nonlinear")

        try:
            time = affine_of(node.left, name, self.types)
        except NotAffine:
            raise bad from None
        if time.coeffs != {t: 1}:
            raise bad
        return time, modulus

    def _spatial_subscript(self, node: c_ast.Node) -> Affine:
        def name(id_node: c_ast.ID) -> Affine:
            if id_node.name in self.loop_vars:
                return Affine.var(id_node.name)
            return self._integer_param(id_node, "subscript")

        try:
            return affine_of(node, name, self.types)
        except NotAffine as exc:
            if exc.reason == "indirect":
                inner = c_text(exc.node)
                reads = f" reads '{inner}'" if inner != c_text(node) else ""
                message = (f"data-dependent (indirect) index '{c_text(node)}'{reads} "
                           f"(subscripts must be affine in the loop variables and "
                           f"parameters, so that the cells read are known in advance)")
            elif exc.reason == "not integer":
                message = f"subscript '{c_text(node)}' is not an integer expression"
            else:
                message = (f"subscript '{c_text(node)}' is not affine (subscripts must be "
                           f"loop variables and parameters times constants, plus a constant)")
            raise UnsupportedInput(message, self.coord(node)) from None

    # ---------------------------------------------------------------- arrays

    def _array(self, name: str, id_node: c_ast.ID, access_coord: Coord | None) -> ArrayDecl:
        if name in self.arrays:
            return self.arrays[name]
        decl = self.visible.get(name)
        coord = self.coord(id_node)
        if decl is None:
            raise UnsupportedInput(f"undeclared array '{name}'", coord)
        ctype = self.types.resolve(decl.node) if decl.kind != "enumerator" else None
        if not isinstance(ctype, (ArrayType, PointerType)):
            raise UnsupportedInput(f"subscripted value '{name}' is not an array", coord)
        # The one rule for which arrays are read-only: an array is a field if some
        # statement of the scop writes it (:meth:`_collect_fields` knows them all before
        # any expression is read), and read-only otherwise.
        read_only = name not in self._fields
        array = self._array_decl(decl, ctype, self.declaration_coord(decl.node), read_only,
                                 access_coord)
        self.arrays[name] = array
        return array

    def _array_decl(self, decl: Declaration, ctype: CType, coord: Coord | None,
                    read_only: bool, first_read: Coord | None) -> ArrayDecl:
        name = decl.name
        pointer = isinstance(ctype, PointerType)
        layer = ctype.target if pointer else ctype
        sizes: list[c_ast.Node | None] = []
        while isinstance(layer, ArrayType):
            sizes.append(layer.size)
            layer = layer.element
        if not isinstance(layer, ScalarType):
            raise UnsupportedInput(
                f"'{name}' is declared as {describe(ctype)}; an5dpy needs a declaration that "
                f"gives every spatial extent, such as 'float (*{name})[n][n]' or "
                f"'float {name}[2][n][n]'", coord)
        if layer.name == "long double":
            raise UnsupportedInput(f"array '{name}' has element type long double (GPUs have "
                                   f"no long double; use float or double)", coord)
        if layer.name not in ir.FLOAT_TYPES:
            raise UnsupportedInput(f"array '{name}' has element type {layer.name}; only float "
                                   f"and double stencils are supported", coord)
        form = "vla_pointer" if pointer else {"parameter": "parameter", "global": "global"} \
            .get(decl.kind, "local")
        if read_only:
            return self._read_only_decl(decl, layer.name, pointer, sizes, coord, form,
                                        first_read)
        return self._field_decl(decl, layer.name, pointer, sizes, coord, form)

    def _field_decl(self, decl: Declaration, elem_type: str, pointer: bool,
                    sizes: list[c_ast.Node | None], coord: Coord | None,
                    form: str) -> ArrayDecl:
        """A field: a time-buffer dimension plus one per spatial loop (a pointer counts as
        the time dimension: ``float (*A)[n][n]``), or, updated in place, one per spatial
        loop (``float ey[n][n]``; a pointer ``float (*ey)[n]`` or a parameter
        ``float ey[][n]`` leaves the outermost extent open: another field's, or where none
        declares it, inferred from the accesses, :meth:`_inferred_outer_extent`)."""
        name = decl.name
        rank = len(sizes) + pointer
        loops = self.space_dims
        if rank not in (loops, loops + 1):
            counted = (f"{rank - 1} spatial dimension{'s' * (rank != 2)}" if rank > loops
                       else f"{rank} dimension{'s' * (rank != 1)}")
            raise UnsupportedInput(
                f"array '{name}' has {counted} but the loop nest has {loops} spatial loops "
                f"(an array the scop writes needs a time-buffer dimension plus one per "
                f"spatial loop, or one per spatial loop where it is updated in place)", coord)
        if rank == loops + 1:
            time_size, space_sizes = (None, sizes) if pointer else (sizes[0], sizes[1:])
            extents = tuple(self._extent(name, k, size)
                            for k, size in enumerate(space_sizes, 1))
            time_extent = self._time_extent(name, time_size) if not pointer else None
            array = ArrayDecl(name=name, elem_type=elem_type, extents=extents,
                              time_extent=time_extent, form=form, coord=coord)
        else:
            open_outer = pointer or sizes[0] is None
            declared = sizes if pointer else sizes[open_outer:]
            extents = tuple(self._extent(name, k, size)
                            for k, size in enumerate(declared, 1 + open_outer))
            if open_outer:
                self._open_fields.append(name)
            array = ArrayDecl(name=name, elem_type=elem_type, extents=extents,
                              time_extent=None, form=form, coord=coord, in_place=True)
        self._check_field_extents(array)
        return array

    def _check_field_extents(self, array: ArrayDecl) -> None:
        """Every field has the same spatial extents (the blocked schedule walks one grid);
        a field with an open outermost extent is compared on the others."""
        for other in self.arrays.values():
            if other.read_only:
                continue
            common = min(len(array.extents), len(other.extents))
            if array.extents[len(array.extents) - common:] \
                    != other.extents[len(other.extents) - common:]:
                raise UnsupportedInput(
                    f"fields '{other.name}' and '{array.name}' have different extents "
                    f"({self._extents_text(other)} and {self._extents_text(array)}): every "
                    f"array the time step writes must have the same spatial extents",
                    array.coord)

    def _extents_text(self, array: ArrayDecl) -> str:
        open_outer = "[]" if array.name in self._open_fields else ""
        return open_outer + "".join(f"[{extent}]" for extent in array.extents)

    def _close_open_field_extents(self, extent: Affine, inferred: bool) -> None:
        """Give the in-place fields declared without their outermost extent ``extent``: that
        of a field that declares it (all fields have the same extents), or the one
        inferred from the accesses."""
        for name in self._open_fields:
            array = self.arrays[name]
            self.arrays[name] = dataclasses.replace(
                array, extents=(extent, *array.extents), outer_extent_inferred=inferred)
        self._open_fields.clear()

    def _inferred_outer_extent(self, nests: Sequence[ir.LoopNest]) -> Affine:
        """No field declares the outermost extent (each is a pointer to rows,
        ``float (*ey)[n]``): the smallest extent that covers every cell the scop touches in
        dimension 0, one more than the highest index any access of a field reaches there
        (:func:`_highest_index`, over the loops of the access's nest). The nests may reach
        different highest indices (``n - 1`` and ``n - 2``): the largest is taken where
        they differ by constants; where they differ by an amount that depends on the
        parameters, which one is larger is not known and the extent must be declared.
        Accesses whose first subscript is not a loop variable plus a constant are left to
        the analysis, which refuses them. That no access reaches below index 0 is the analysis'
        bounds check (:mod:`an5dpy.analysis.stencil`)."""
        name = self._open_fields[0]
        array = self.arrays[name]
        declare = (f"declare '{name}' with its extent (such as '{array.elem_type} {name}[n]"
                   f"{''.join(f'[{e}]' for e in array.extents)}')")
        unknown = (f"the outermost extent of field '{name}' is not declared, nor that of any "
                   f"other field the scop writes")
        reached: list[tuple[Affine, Access]] = []
        for nest in nests:
            for statement in nest.statements:
                for acc in (statement.target, *ir.walk(statement.value)):
                    if isinstance(acc, Access) and acc.array in self._open_fields:
                        highest = _highest_index(acc.indices[0], nest.loops)
                        if highest is not None:
                            reached.append((highest, acc))
        if not reached:
            raise UnsupportedInput(
                f"{unknown}, and no access of a field subscripts dimension 0 with a spatial "
                f"loop variable plus a constant, so it cannot be inferred: {declare}",
                array.coord)
        largest = _largest([highest for highest, _ in reached])
        if largest is None:
            first, first_acc = reached[0]
            other, other_acc = next((h, a) for h, a in reached
                                    if not (h - first).is_constant)
            raise UnsupportedInput(
                f"{unknown}, and the accesses do not decide it: {_access_text(first_acc)} "
                f"(line {_line(first_acc.coord)}) reaches index {first} of dimension 0 and "
                f"{_access_text(other_acc)} (line {_line(other_acc.coord)}) index {other}, "
                f"which differ by an amount that depends on the parameters, so which is "
                f"the larger is unknown (an extent inferred from the accesses covers the "
                f"highest index any of them reaches): {declare}", array.coord)
        return largest + 1

    def _read_only_decl(self, decl: Declaration, elem_type: str, pointer: bool,
                        sizes: list[c_ast.Node | None], coord: Coord | None, form: str,
                        first_read: Coord | None) -> ArrayDecl:
        """A read-only array: no time dimension, rank 1 to the number of spatial loops. A
        pointer (``float *f``, ``float (*f)[n]``) or a parameter ``float f[][n]`` leaves
        the outermost extent open; :meth:`_close_open_extents` takes it from the fields."""
        name = decl.name
        open_outer = pointer or (bool(sizes) and sizes[0] is None)
        rank = len(sizes) + pointer
        if not 1 <= rank <= self.space_dims:
            raise UnsupportedInput(
                f"read-only array '{name}' has {rank} dimension{'s' * (rank != 1)}; a "
                f"read-only array may have 1 to {self.space_dims} (one per spatial loop "
                f"at most, no time dimension)", coord)
        declared = sizes[1:] if open_outer and not pointer else sizes
        first = 1 + open_outer
        extents = tuple(self._extent(name, k, size) for k, size in enumerate(declared, first))
        if open_outer:
            self._open_outer[name] = first_read
        return ArrayDecl(name=name, elem_type=elem_type, extents=extents, time_extent=None,
                         form=form, coord=coord, read_only=True)

    def _read_only_access(self, array: ArrayDecl, subscripts: list[c_ast.Node],
                          coord: Coord | None) -> Access:
        """``f[i-1][j]``, ``cz[i]``, ``c[2][j]``: each subscript a spatial loop variable
        plus a constant, or a constant, each loop variable at most once."""
        name = array.name
        rank = len(array.extents) + (name in self._open_outer)
        if len(subscripts) != rank:
            raise UnsupportedInput(f"read-only array '{name}' has {rank} dimension"
                                   f"{'s' * (rank != 1)} but is subscripted with "
                                   f"{len(subscripts)} ind{'ex' if len(subscripts) == 1 else 'ices'}",
                                   coord)
        indices: list[Affine] = []
        for node in subscripts:
            index = self._read_only_subscript(name, node)
            repeated = [v for v in index.variables if any(v in i.variables for i in indices)]
            if repeated:
                raise UnsupportedInput(
                    f"read-only array '{name}' is subscripted twice with loop variable "
                    f"'{repeated[0]}' (each spatial loop variable may index one dimension of "
                    f"a read-only array)", self.coord(node))
            indices.append(index)
        return Access(array.elem_type, coord, array=name, time=None, indices=tuple(indices))

    def _read_only_subscript(self, array: str, node: c_ast.Node) -> Affine:
        index = self._spatial_subscript(node)
        text = c_text(node)
        if self.time_var in index.variables:
            raise UnsupportedInput(
                f"subscript '{text}' of read-only array '{array}' uses the time loop "
                f"variable '{self.time_var}' (read-only arrays have no time dimension: the "
                f"same values are read at every time step)", self.coord(node))
        params = [v for v in index.variables if v not in self.loop_vars]
        if params:
            raise UnsupportedInput(
                f"subscript '{text}' of read-only array '{array}' uses parameter "
                f"'{params[0]}' (each subscript of a read-only array must be a spatial loop "
                f"variable plus a constant, or a constant)", self.coord(node))
        if len(index.terms) > 1:
            raise UnsupportedInput(
                f"subscript '{text}' of read-only array '{array}' combines loop variables "
                f"{' and '.join(repr(v) for v in index.variables)} (each subscript of a "
                f"read-only array must be one loop variable plus a constant, or a constant)",
                self.coord(node))
        if index.terms and index.terms[0][1] != 1:
            var, factor = index.terms[0]
            raise UnsupportedInput(
                f"subscript '{text}' of read-only array '{array}' multiplies loop variable "
                f"'{var}' by {factor} (each subscript of a read-only array must be one loop "
                f"variable plus a constant, or a constant)", self.coord(node))
        return index

    def _close_open_extents(self, target: Access, value: Expr) -> None:
        """The outermost extent of a read-only array declared as a pointer is the extent
        of the grid dimension its first subscript follows: the first read (in statement
        order) that subscripts it with a loop variable decides, in the extents of the
        field its statement writes (every field has the same)."""
        for name in list(self._open_outer):
            for acc in (e for e in ir.walk(value) if isinstance(e, Access) and e.array == name):
                variables = acc.indices[0].variables
                dims = [d for d, index in enumerate(target.indices)
                        if variables and variables[0] in index.variables]
                if dims:
                    extent = self.arrays[target.array].extents[dims[0]]
                    array = self.arrays[name]
                    self.arrays[name] = dataclasses.replace(array,
                                                            extents=(extent, *array.extents))
                    del self._open_outer[name]
                    break

    def _require_closed_extents(self) -> None:
        """After every statement: a read-only array whose outermost extent no read
        decided."""
        for name, first_read in self._open_outer.items():
            raise UnsupportedInput(
                f"the outermost extent of read-only array '{name}' is not declared and "
                f"no read subscripts that dimension with a spatial loop variable, so it "
                f"is unknown: declare '{name}' with its extent (such as "
                f"'float {name}[n]...')", first_read)

    def _extent(self, array: str, k: int, size: c_ast.Node | None) -> Affine:
        if size is None:
            raise UnsupportedInput(f"array '{array}' does not give the extent of its spatial "
                                   f"dimension {k}",
                                   self.declaration_coord(self.visible[array].node))

        def name(id_node: c_ast.ID) -> Affine:
            if id_node.name in self.all_loop_vars:
                raise NotAffine(id_node, "nonlinear")
            decl, ctype = self._scalar_declaration(id_node)
            if ctype not in _INTEGER_NAMES:
                raise NotAffine(id_node, "not integer")
            self._deferred_params.append(decl)
            return Affine.var(id_node.name)

        try:
            return affine_of(size, name, self.types)
        except NotAffine as exc:
            raise UnsupportedInput(self._not_affine_message(
                exc, f"extent '{c_text(size)}' of array '{array}'", "parameters and constants"),
                self.coord(size)) from None

    def _time_extent(self, array: str, size: c_ast.Node | None) -> int | None:
        if size is None:
            return None
        try:
            extent = affine_of(size, _no_names, self.types)
        except NotAffine:
            return None
        if extent.const < 2:
            raise UnsupportedInput(f"the time dimension of '{array}' has {extent.const} "
                                   f"buffer{'s' * (extent.const != 1)}; double buffering "
                                   f"needs 2 (and a rotation (t + c) % k needs k)",
                                   self.coord(size))
        return extent.const

    # ---------------------------------------------------------------- parameters

    def params(self) -> tuple[Param, ...]:
        """Every scalar read, in order of first use, then what their definitions use."""
        written = _Lazy(lambda: written_names(self.function.body))
        loop_vars = self.all_loop_vars
        result: dict[str, Param] = {}
        queue = list(self._param_decls.values())
        while queue:
            decl = queue.pop(0)
            if decl.name in result or decl.name in loop_vars:
                continue
            ctype = self.types.resolve(decl.node)
            assert isinstance(ctype, ScalarType)
            value = _constant_value(decl, ctype.name, self.types)
            definition, uses = (None, []) if value is not None else \
                self._definition(decl, ctype.name, written)
            result[decl.name] = Param(name=decl.name, ctype=ctype.name,
                                      coord=self.declaration_coord(decl.node),
                                      definition=definition,
                                      value=value)
            queue.extend(uses)
        return tuple(result.values())

    def _definition(self, decl: Declaration, ctype: str,
                    lazy_written: "_Lazy") -> tuple[Affine | None, list[Declaration]]:
        """``int dimsize = compsize + 2;`` never reassigned: dimsize follows from compsize."""
        node = decl.node
        if decl.kind != "local" or ctype not in _INTEGER_NAMES or node.init is None \
                or "static" in (node.storage or []):
            return None, []
        written = lazy_written.get()
        if decl.name in written:
            return None, []
        uses: list[Declaration] = []

        def name(id_node: c_ast.ID) -> Affine:
            other = self.visible.get(id_node.name)
            if other is None or other.kind == "enumerator" or other.name in written \
                    or other.name in self.all_loop_vars or other.name == decl.name:
                raise NotAffine(id_node, "nonlinear")
            other_type = self.types.resolve(other.node)
            if not (isinstance(other_type, ScalarType) and other_type.name in _INTEGER_NAMES):
                raise NotAffine(id_node, "nonlinear")
            uses.append(other)
            return Affine.var(id_node.name)

        try:
            return affine_of(node.init, name, self.types), uses
        except NotAffine:
            return None, []


class _Lazy:
    """A value computed on first use (walking a whole function body is not free)."""

    def __init__(self, compute):
        self._compute = compute
        self._done = False
        self._value = None

    def get(self):
        if not self._done:
            self._value, self._done = self._compute(), True
        return self._value


class _ExprNames:
    """The :class:`ExprContext` of the update expression."""

    def __init__(self, reader: _ScopReader):
        self.reader = reader

    def coord(self, node: c_ast.Node) -> Coord | None:
        return self.reader.coord(node)

    def scalar(self, node: c_ast.ID) -> Expr:
        reader = self.reader
        if node.name in reader.loop_vars:
            raise UnsupportedInput(f"loop index '{node.name}' used as a value (the update may "
                                   f"use loop indices only in subscripts)", self.coord(node))
        decl, ctype = reader._scalar_declaration(node)
        reader._record_param(decl)
        return Scalar(ctype, self.coord(node), name=node.name)

    def access(self, node: c_ast.ArrayRef) -> Expr:
        return self.reader._access(node)

    def cast_type(self, node: c_ast.Cast) -> str:
        ctype = self.reader.types.resolve(node.to_type)
        coord = self.coord(node)
        if isinstance(ctype, ScalarType) and ctype.name == "long double":
            raise UnsupportedInput("cast to long double (GPUs have no long double)", coord)
        if isinstance(ctype, ScalarType) and ctype.name in ("_Bool", "bool"):
            raise UnsupportedInput("cast to _Bool is not supported (it is a comparison with "
                                   "zero, not arithmetic)", coord)
        if not is_arithmetic(ctype):
            raise UnsupportedInput(f"cast to '{describe(ctype)}' is not supported (only casts "
                                   f"to arithmetic types)", coord)
        return ctype.name


_INTEGER_NAMES = frozenset(ir.INT_TYPES + tuple(t for t in ir.PROMOTED_TO_INT
                                                 if t not in ("_Bool", "bool")))


_INT_MAX = 2 ** 31 - 1


def _loop_var_name(node: c_ast.For) -> str:
    init = node.init
    if isinstance(init, c_ast.Assignment) and isinstance(init.lvalue, c_ast.ID):
        return init.lvalue.name
    if isinstance(init, c_ast.DeclList) and init.decls and init.decls[0].name:
        return init.decls[0].name
    return "?"


def _no_names(id_node: c_ast.ID) -> Affine:
    """For constant expressions: any identifier makes them non-constant."""
    raise NotAffine(id_node, "nonlinear")


def _highest_index(index: Affine, loops: Sequence[Loop]) -> Affine | None:
    """The highest value a subscript ``v + c`` takes over its nest: the upper bound of the
    loop over ``v`` plus ``c``. None for any other subscript (a constant, a parameter, the
    time loop's variable, a loop variable times a factor): every access of a field must be
    at a constant offset from the loop point, and the analysis refuses the others, naming
    the access."""
    bounds = {loop.var: loop for loop in loops}
    if len(index.terms) != 1 or index.terms[0][1] != 1 or index.terms[0][0] not in bounds:
        return None
    return bounds[index.terms[0][0]].upper + index.const


def _largest(values: Sequence[Affine]) -> Affine | None:
    """The one of ``values`` that each other is below or equal to by a constant, or None
    where two differ by an amount that depends on the parameters."""
    for candidate in values:
        if all((candidate - v).is_constant and (candidate - v).const >= 0 for v in values):
            return candidate
    return None


def _access_text(acc: Access) -> str:
    """An access of a field in place as C spells it: ``ey[i + 1][j]``."""
    return acc.array + "".join(f"[{index}]" for index in acc.indices)


def _line(coord: Coord | None) -> str:
    return str(coord.line) if coord is not None else "?"


def _subscript_base(node: c_ast.Node) -> c_ast.Node:
    while isinstance(node, c_ast.ArrayRef):
        node = node.name
    return node


def _subscripts(node: c_ast.ArrayRef) -> list[c_ast.Node]:
    result = []
    while isinstance(node, c_ast.ArrayRef):
        result.append(node.subscript)
        node = node.name
    return result[::-1]


def _constant_value(decl: Declaration, ctype: str, types: TypeResolver) -> int | float | None:
    """The value of ``const T name = <literal or integer constant expression>;``."""
    node = decl.node
    if decl.kind == "parameter" or not declaration_is_const(node) or node.init is None:
        return None
    init = node.init
    if ctype in _INTEGER_NAMES:
        try:
            value = affine_of(init, _no_names, types)
        except NotAffine:
            return None
        if not value.is_constant:
            return None
        if ctype.startswith("unsigned"):  # C converts modulo 2**bits
            return value.const % (literals.int_range(ctype)[1] + 1)
        return value.const
    sign = 1
    while isinstance(init, c_ast.UnaryOp) and init.op in ("-", "+"):
        sign = -sign if init.op == "-" else sign
        init = init.expr
    if not isinstance(init, c_ast.Constant) or init.type in ("char", "string"):
        return None
    try:
        if literals.is_floating_spelling(init.value):
            literal = literals.floating_literal(init.value)
        else:
            literal = literals.integer_literal(init.value)
    except literals.LiteralError:
        return None
    value = sign * literal.value
    return literals.round_to_float32(value) if ctype == "float" else float(value)
