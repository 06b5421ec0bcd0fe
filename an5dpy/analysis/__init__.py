

def analyze(program):
    """Analyse ``program`` (an :class:`~an5dpy.ir.StencilProgram`) into an
    :class:`~an5dpy.ir.StencilInfo`; raise :class:`~an5dpy.errors.UnsupportedInput` if it
    cannot be blocked. A time step of several statements, or a field updated in place,
    goes to :mod:`an5dpy.analysis.fields`; the one-statement form to
    :mod:`an5dpy.analysis.stencil`."""
    from an5dpy.analysis.fields import analyze_fields
    from an5dpy.analysis.stencil import analyze_statement

    if program.multi_statement or program.array.in_place:
        return analyze_fields(program)
    return analyze_statement(program)
