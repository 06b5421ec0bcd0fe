/* expect: {"ndim": 2, "radius": [1, 1], "shape": "star", "diagonal_free": true, "associative": false, "opt": "nondiag", "flops_per_cell": 13, "dtype": "float", "params": ["T", "n", "dt"], "offsets": [[-1, 0], [0, -1], [0, 0], [0, 1], [1, 0]], "arrays": [{"name": "A", "role": "updated", "elem_type": "float", "rank": 2, "time_levels": 2, "history": 1, "extents": ["n", "n"], "offsets": [[-1, 0], [0, -1], [0, 0], [0, 1], [1, 0]], "reads": [{"lag": 1, "offsets": [[-1, 0], [0, -1], [0, 0], [0, 1], [1, 0]]}]}, {"name": "k", "role": "read_only", "elem_type": "float", "rank": 2, "time_levels": 0, "extents": ["n", "n"], "offsets": [[{"dim": 0, "offset": -1}, {"dim": 1, "offset": 0}], [{"dim": 0, "offset": 0}, {"dim": 1, "offset": -1}], [{"dim": 0, "offset": 0}, {"dim": 1, "offset": 0}]]}]} */
/* Form: heat equation with a variable conductivity: the read-only array `k` (a VLA pointer
   cast, like the grid, its outermost extent taken from the grid) is read at the cell and
   at its lower neighbours in both dimensions. */

void heat(int n, int T, float dt, float *buf, float *kbuf)
{
  float (*A)[n][n] = (float (*)[n][n]) buf;
  float (*k)[n] = (float (*)[n]) kbuf;
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t + 1) % 2][i][j] = A[t % 2][i][j]
            + dt * (k[i][j] * (A[t % 2][i + 1][j] - A[t % 2][i][j])
                    - k[i - 1][j] * (A[t % 2][i][j] - A[t % 2][i - 1][j])
                    + k[i][j] * (A[t % 2][i][j + 1] - A[t % 2][i][j])
                    - k[i][j - 1] * (A[t % 2][i][j] - A[t % 2][i][j - 1]));
#pragma endscop
}
