/* expect: {"ndim": 2, "radius": [1, 1], "shape": "star", "diagonal_free": true, "associative": false, "opt": "nondiag", "flops_per_cell": 6, "dtype": "float", "offsets": [[0, 0]], "params": ["T", "n"], "loops": {"time": {"var": "t", "lower": "0", "upper": "T - 1", "buffers": 3}}, "arrays": [{"name": "p", "role": "updated", "elem_type": "float", "rank": 2, "time_levels": 3, "history": 3, "extents": ["n", "n"], "offsets": [[0, 0]], "reads": [{"lag": 1, "offsets": [[0, 0]]}, {"lag": 2, "offsets": [[-1, -1], [1, 1]]}, {"lag": 3, "offsets": [[0, 0]]}]}]} */
/* Form: three time buffers, the update reading level t-2 from the buffer it writes, at the
   cell itself (C reads the right-hand side before the store), and level t-1 diagonally. */
void f(int n, int T, float p[3][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        p[(t+2)%3][i][j] = 0.5f * p[(t+1)%3][i][j] - 0.25f * p[(t+2)%3][i][j]
            + 0.125f * (p[t%3][i-1][j-1] + p[t%3][i+1][j+1]);
#pragma endscop
}
