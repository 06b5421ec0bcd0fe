/* expect: {"ndim": 2, "radius": [1, 1], "shape": "star", "diagonal_free": true, "associative": false, "opt": "nondiag", "flops_per_cell": 6, "dtype": "double", "params": ["T", "n", "h2"], "offsets": [[-1, 0], [0, -1], [0, 1], [1, 0]], "arrays": [{"name": "A", "role": "updated", "elem_type": "double", "rank": 2, "time_levels": 2, "history": 1, "extents": ["n", "n"], "offsets": [[-1, 0], [0, -1], [0, 1], [1, 0]], "reads": [{"lag": 1, "offsets": [[-1, 0], [0, -1], [0, 1], [1, 0]]}]}, {"name": "f", "role": "read_only", "elem_type": "double", "rank": 2, "time_levels": 0, "extents": ["n", "n"], "offsets": [[{"dim": 0, "offset": 0}, {"dim": 1, "offset": 0}]]}]} */
/* Form: Jacobi iteration of a Poisson problem with a right-hand side: the read-only array
   `f` (a function parameter like the grid) is read at the cell itself. */

void poisson(int n, int T, double h2, double A[2][n][n], double f[n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t + 1) % 2][i][j] = 0.25 * (A[t % 2][i - 1][j] + A[t % 2][i + 1][j]
                                       + A[t % 2][i][j - 1] + A[t % 2][i][j + 1]
                                       - h2 * f[i][j]);
#pragma endscop
}
