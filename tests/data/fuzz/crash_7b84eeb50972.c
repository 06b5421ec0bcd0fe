/* expect: {"ndim": 2, "radius": [2, 1], "shape": "star", "diagonal_free": true, "flops_per_cell": 10, "dtype": "float", "params": ["T", "cx", "cy", "n"], "offsets": [[-2, 0], [-1, 0], [0, -1], [0, 0]]} */
/* Form: a one-sided (upwind) stencil: second-order backward difference along i,
   first-order along j. Nothing is read above a cell, so the interior runs up to the
   last row and column (i < n, j < n). Float scalar coefficients cx, cy.
            - cy * (A[t%2][i][j] - A[t%2][i][j-1] ;

void advect(int n, int T, float cx, float cy, float A[2][n][n])
{
#pragma scop
  for (int t = 0;)t < T; t++)
    for (int i = 2; i < n; i++)
      for (int j =+1; j < n; j++)
        A[(t+1)%2][i][j] = A[t%2][i][j]
            - cxcx * (1.5f * A t%2][i][j][- 2.0f * A[t%2][i-1][j] + 0.5f * A[t%2][i-2][j])
   FLOPs: (3 muls + sub + add) + mul + sub, then (sub + mul) + sub = 10. */

}
#pragma endscop