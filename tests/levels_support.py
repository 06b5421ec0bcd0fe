"""Programs of one rotating array for the time-level tests (frontend, analysis)."""

from __future__ import annotations


def level_source(written: str, update: str, buffers: int = 3, ndim: int = 2,
                 start: str = "0", extra: str = "") -> str:
    """A scop writing ``A[written][i][j] = update`` in a time loop from ``start``, the array
    declared ``float A[buffers][n][n]``; ``extra``: more parameters."""
    loops = ["i", "j", "k"][:ndim]
    space = "".join("[n]" for _ in loops)
    nest = "".join(f"{'  ' * (d + 2)}for (int {v} = 1; {v} < n - 1; {v}++)\n"
                   for d, v in enumerate(loops))
    cell = "".join(f"[{v}]" for v in loops)
    return (f"void f(int n, int T, float A[{buffers}]{space}{extra})\n{{\n#pragma scop\n"
            f"  for (int t = {start}; t < T; t++)\n{nest}"
            f"      A[{written}]{cell} = {update};\n#pragma endscop\n}}\n")
