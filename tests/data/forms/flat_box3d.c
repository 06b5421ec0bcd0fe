/* expect: {"ndim": 3, "radius": [0, 1, 1], "shape": "box", "diagonal_free": true, "flops_per_cell": 17, "dtype": "double", "params": ["T", "n"], "offsets": [[0, -1, -1], [0, -1, 0], [0, -1, 1], [0, 0, -1], [0, 0, 0], [0, 0, 1], [0, 1, -1], [0, 1, 0], [0, 1, 1]]} */
/* Form: a box read in the plane only (no other plane along the streamed dimension:
   streaming radius 0), a sum of products, so mode assoc as well as nondiag. In mode
   assoc a kernel whose computing threads load the halo then adds each arriving plane into
   its own sums alone: its first arriving plane is the stream block's first (the kernel
   once left it undeclared there). Double; FLOPs: 9 muls + 8 adds = 17. */

void flat_box(int n, int T, double A[2][n][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        for (int k = 1; k < n - 1; k++)
          A[(t+1)%2][i][j][k] = 0.20 * A[t%2][i][j][k]
              + 0.11 * A[t%2][i][j-1][k-1] + 0.12 * A[t%2][i][j-1][k] + 0.13 * A[t%2][i][j-1][k+1]
              + 0.09 * A[t%2][i][j][k-1] + 0.08 * A[t%2][i][j][k+1]
              + 0.07 * A[t%2][i][j+1][k-1] + 0.06 * A[t%2][i][j+1][k] + 0.05 * A[t%2][i][j+1][k+1];
#pragma endscop
}
