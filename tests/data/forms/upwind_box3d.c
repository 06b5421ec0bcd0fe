/* expect: {"ndim": 3, "radius": [2, 1, 1], "shape": "general", "diagonal_free": false, "flops_per_cell": 15, "dtype": "float", "params": ["T", "n"], "offsets": [[-2, 0, 0], [-2, 0, 1], [-1, -1, 1], [-1, 0, 0], [-1, 1, -1], [0, -1, -1], [0, 0, 0], [0, 1, 1]]} */
/* Form: a one-sided (upwind) box along the streamed dimension: planes i-2, i-1 and i,
   each read at in-plane diagonals too (so mode assoc), nothing read above a plane. Its
   streaming radius (2) exceeds its reach above (0), so a kernel whose computing threads
   load the halo starts a stream block's arriving planes below the array where a block
   starts at the interior's first plane. Float literals; FLOPs: 8 muls + 7 adds = 15. */

void upwind_box(int n, int T, float A[2][n][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 2; i < n; i++)
      for (int j = 1; j < n - 1; j++)
        for (int k = 1; k < n - 1; k++)
          A[(t+1)%2][i][j][k] = 0.30f * A[t%2][i][j][k]
              + 0.05f * A[t%2][i][j-1][k-1] + 0.06f * A[t%2][i][j+1][k+1]
              + 0.08f * A[t%2][i-1][j][k] + 0.07f * A[t%2][i-1][j-1][k+1]
              + 0.04f * A[t%2][i-1][j+1][k-1]
              + 0.09f * A[t%2][i-2][j][k] + 0.03f * A[t%2][i-2][j][k+1];
#pragma endscop
}
