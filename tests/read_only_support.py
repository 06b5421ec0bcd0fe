"""Programs with read-only (coefficient) arrays, shared by the simulator's tests
(tests/check) and the CUDA generator's (tests/cuda, tests/gpu): every accepted subscript
form (``f[i][j]``, ``k[i-1][j]``, ``cz[i]``, ``row[j+1]``, ``c[2][j]``), 2D and 3D, float
and double, and every declaration form (parameters, VLA-pointer casts, globals, locals)."""

from __future__ import annotations

#: name -> (C text, parameters); every program reads at least one read-only array.
PROGRAMS = {
    # a Poisson right-hand side at the cell, double
    "poisson": ("""
void poisson(int n, int m, int T, double h2, double A[2][n][m], double f[n][m])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < m - 1; j++)
        A[(t+1)%2][i][j] = 0.25 * (A[t%2][i-1][j] + A[t%2][i+1][j] + A[t%2][i][j-1]
                                   + A[t%2][i][j+1] - h2 * f[i][j]);
#pragma endscop
}
""", {"h2": "0.01"}),
    # a conductivity read at the cell and below it, float, VLA pointer casts
    "conductivity": ("""
void heat(int n, int m, int T, float *buf, float *kbuf)
{
  float (*A)[n][m] = (float (*)[n][m]) buf;
  float (*k)[m] = (float (*)[m]) kbuf;
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < m - 1; j++)
        A[(t+1)%2][i][j] = A[t%2][i][j]
            + 0.1f * (k[i][j] * (A[t%2][i+1][j] - A[t%2][i][j])
                      - k[i-1][j] * (A[t%2][i][j] - A[t%2][i-1][j])
                      + k[i][j] * (A[t%2][i][j+1] - A[t%2][i][j])
                      - k[i][j-1] * (A[t%2][i][j] - A[t%2][i][j-1]));
#pragma endscop
}
""", {}),
    # per-plane (streaming dimension) and per-row (contiguous dimension) coefficients,
    # a constant subscript, float grid with double coefficients
    "planes_rows": ("""
void planes(int n, int m, int T, float A[2][n][m], double cz[n], float *row, double c[3][m])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < m - 1; j++)
        A[(t+1)%2][i][j] = cz[i] * A[t%2][i-1][j] + row[j+1] * A[t%2][i][j]
                           + c[2][j] * A[t%2][i][j-1] + 0.1f * A[t%2][i+1][j];
#pragma endscop
}
""", {}),
    # a 3D velocity model (global array) and a per-plane coefficient, double, box reads
    "velocity3d": ("""
#define N 12
double V[N][N][N];
double cz[N];
void wave(int T, double A[2][N][N][N])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < N - 1; i++)
      for (int j = 1; j < N - 1; j++)
        for (int k = 1; k < N - 1; k++)
          A[(t+1)%2][i][j][k] = V[i][j][k] * (A[t%2][i-1][j][k] + A[t%2][i+1][j][k]
                                   + A[t%2][i][j-1][k] + A[t%2][i][j+1][k]
                                   + A[t%2][i][j][k-1] + A[t%2][i][j][k+1])
                                + cz[i-1] * A[t%2][i][j-1][k-1];
#pragma endscop
}
""", {}),
    # 3D, float, a local coefficient of rank 2 over the in-plane dimensions
    "local3d": ("""
float run(int T, float A[2][9][11][10])
{
  float w[11][10];
  for (int j = 0; j < 11; j++)
    for (int k = 0; k < 10; k++)
      w[j][k] = 0.1f;
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < 8; i++)
      for (int j = 1; j < 10; j++)
        for (int k = 1; k < 9; k++)
          A[(t+1)%2][i][j][k] = w[j][k] * A[t%2][i][j][k] + 0.2f * (A[t%2][i-1][j][k]
                                + A[t%2][i+1][j][k]) + w[j-1][k+1] * A[t%2][i][j][k+1];
#pragma endscop
  return A[0][1][1][1];
}
""", {}),
    # 3D, float, an update that is a sum of terms each reading one plane (associative but
    # for its read-only arrays, see forced_assoc): a grid-shaped and a per-plane array
    "sum3d": ("""
void sum3d(int n, int T, float A[2][n][n][n], float g[n][n][n], float cz[n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        for (int k = 1; k < n - 1; k++)
          A[(t+1)%2][i][j][k] = g[i][j][k] * A[t%2][i-1][j][k] + cz[i+1] * A[t%2][i][j][k-1]
                                + cz[i] * A[t%2][i][j+1][k] + 0.25f * A[t%2][i+1][j][k]
                                + g[i][j][k-1] * A[t%2][i][j][k] - 0.125f * cz[i-1];
#pragma endscop
}
""", {"n": "9"}),
}

#: Programs whose update is a sum of terms that each read one plane of the grid: mode
#: assoc would apply but for their read-only arrays (see :func:`forced_assoc`).
SUMS = ("poisson", "planes_rows", "sum3d")


def forced_assoc(info):
    """``info`` with the associative form of its update, as the analysis would give it if
    it allowed mode assoc with read-only arrays (it does not yet, see
    :func:`an5dpy.analysis.stencil.assoc_form`'s caller): the CUDA generator prints mode
    assoc's coefficient reads, and these let the tests build and run them."""
    import dataclasses

    from an5dpy.analysis.stencil import assoc_form
    form = assoc_form(info.update, info.dtype)
    assert form is not None, "not a sum of one-plane terms"
    return dataclasses.replace(info, assoc=form, associative=True)


def write(tmp_path, name: str) -> str:
    """``PROGRAMS[name]``'s text as ``tmp_path/NAME.c``; its path."""
    path = tmp_path / f"{name}.c"
    path.write_text(PROGRAMS[name][0])
    return str(path)
