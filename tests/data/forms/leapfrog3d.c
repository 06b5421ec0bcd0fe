/* expect: {"ndim": 3, "radius": [1, 1, 1], "shape": "star", "diagonal_free": true, "associative": false, "opt": "nondiag", "flops_per_cell": 11, "dtype": "double", "params": ["T", "n", "dt2"], "offsets": [[-1, 0, 0], [0, -1, 0], [0, 0, -1], [0, 0, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0]], "loops": {"time": {"var": "t", "lower": "0", "upper": "T - 1", "buffers": 2}}, "read_shift": 0, "write_shift": 1, "arrays": [{"name": "u", "role": "updated", "elem_type": "double", "rank": 3, "time_levels": 2, "history": 2, "extents": ["n", "n", "n"], "offsets": [[-1, 0, 0], [0, -1, 0], [0, 0, -1], [0, 0, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0]], "reads": [{"lag": 1, "offsets": [[-1, 0, 0], [0, -1, 0], [0, 0, -1], [0, 0, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0]]}, {"lag": 2, "offsets": [[0, 0, 0]]}]}]} */
/* Form: a leapfrog update in two buffers. Step t writes level t+1 into u[(t+1)%2] from
   level t (u[t%2], the cell and its six neighbours) and level t-1, which the written
   buffer still holds at the cell itself until the store: C reads the right-hand side
   first, so u[(t+1)%2][i][j][k] on the right is the old value of the same cell.
   FLOPs: 2.0*u, -, +, dt2*, 5 adds, -, 6.0*u = 11 */

void leapfrog(int n, int T, double dt2, double u[2][n][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        for (int k = 1; k < n - 1; k++)
          u[(t+1)%2][i][j][k] = 2.0 * u[t%2][i][j][k] - u[(t+1)%2][i][j][k]
              + dt2 * (u[t%2][i-1][j][k] + u[t%2][i+1][j][k] + u[t%2][i][j-1][k]
                       + u[t%2][i][j+1][k] + u[t%2][i][j][k-1] + u[t%2][i][j][k+1]
                       - 6.0 * u[t%2][i][j][k]);
#pragma endscop
}
