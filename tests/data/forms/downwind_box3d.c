/* expect: {"ndim": 3, "radius": [2, 1, 1], "shape": "general", "diagonal_free": false, "flops_per_cell": 15, "dtype": "double", "params": ["T", "n"], "offsets": [[0, -1, -1], [0, 0, 0], [0, 1, 1], [1, -1, 1], [1, 0, 0], [1, 1, -1], [2, 0, 0], [2, 0, 1]]} */
/* Form: a one-sided (downwind) box along the streamed dimension: planes i, i+1 and i+2,
   each read at in-plane diagonals too (so mode assoc), nothing read below a plane. Its
   streaming radius (2) exceeds its reach below (0), so a kernel whose computing threads
   load the halo would start a stream block's arriving planes below the array: it starts
   at the array's first plane instead. Double literals; FLOPs: 8 muls + 7 adds = 15. */

void downwind_box(int n, int T, double A[2][n][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 0; i < n - 2; i++)
      for (int j = 1; j < n - 1; j++)
        for (int k = 1; k < n - 1; k++)
          A[(t+1)%2][i][j][k] = 0.30 * A[t%2][i][j][k]
              + 0.05 * A[t%2][i][j-1][k-1] + 0.06 * A[t%2][i][j+1][k+1]
              + 0.08 * A[t%2][i+1][j][k] + 0.07 * A[t%2][i+1][j-1][k+1]
              + 0.04 * A[t%2][i+1][j+1][k-1]
              + 0.09 * A[t%2][i+2][j][k] + 0.03 * A[t%2][i+2][j][k+1];
#pragma endscop
}
