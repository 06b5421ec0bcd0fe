/* expect: {"ndim": 3, "radius": [1, 1, 1], "shape": "star", "diagonal_free": true, "flops_per_cell": 10, "dtype": "float", "params": ["T", "n"], "offsets": [[-1, 0, 0], [0, -1, 0], [0, 0, -1], [0, 0, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0]], "opt": "nondiag", "loops": {"time": {"var": "t", "lower": "0", "upper": "T - 1", "buffers": 3}}} */
/* Form: a 3D star rotating through three time buffers (level t in buffer t % 3), reading
   only the newest level, radius 1, in float. */

void rotate3(int n, int T, float A[3][n][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        for (int k = 1; k < n - 1; k++)
          A[(t+1)%3][i][j][k] = 0.22f * A[t%3][i][j][k]
              + 0.12f * (A[t%3][i-1][j][k] + A[t%3][i+1][j][k])
              + 0.14f * (A[t%3][i][j-1][k] + A[t%3][i][j+1][k])
              + 0.13f * (A[t%3][i][j][k-1] + A[t%3][i][j][k+1]);
#pragma endscop
}
