/* expect: {"ndim": 2, "radius": [1, 1], "shape": "star", "diagonal_free": true, "associative": false, "opt": "nondiag", "flops_per_cell": 23, "dtype": "double", "offsets": [[-1, 0], [0, -1], [0, 0], [0, 1], [1, 0]], "params": ["T", "n", "k"], "loops": {"time": {"var": "t", "lower": "0", "upper": "T - 1", "buffers": 4}}, "arrays": [{"name": "u", "role": "updated", "elem_type": "double", "rank": 2, "time_levels": 4, "history": 3, "extents": ["n", "n"], "offsets": [[-1, 0], [0, -1], [0, 0], [0, 1], [1, 0]], "reads": [{"lag": 1, "offsets": [[-1, 0], [0, -1], [0, 0], [0, 1], [1, 0]]}, {"lag": 2, "offsets": [[-1, 0], [0, -1], [0, 0], [0, 1], [1, 0]]}, {"lag": 3, "offsets": [[-1, 0], [0, -1], [0, 0], [0, 1], [1, 0]]}]}]} */
/* Form: heat diffusion by the third-order Adams-Bashforth method, four time buffers. Step t
   writes level t+1 into u[(t+1)%4] from the Laplacians of levels t, t-1 and t-2 (each at
   the cell and its four neighbours), weighted 23/12, -16/12 and 5/12. */
#define LAP(b, i, j) (u[b][i-1][j] + u[b][i+1][j] + u[b][i][j-1] + u[b][i][j+1] - 4.0 * u[b][i][j])
void ab3(int n, int T, double k, double u[4][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        u[(t+1)%4][i][j] = u[t%4][i][j] + k * (23.0 * LAP(t%4, i, j)
            - 16.0 * LAP((t+3)%4, i, j) + 5.0 * LAP((t+2)%4, i, j)) / 12.0;
#pragma endscop
}
