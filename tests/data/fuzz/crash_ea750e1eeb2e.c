/* expect: {"ndim": 2, "radius": [2, 1], "shape": "box", "diagonal_free": false, "flops_per_cell": 19, "dtype": "float", "params": ["T", "n"], "offsets": [[-2, -1], [-2, 0], [-2, 1], [-1, -1], [-1, 0], [-1, 1], [0, -1], [0, 0], [0, 1], [1, -1], [1, 0], [1, 1], [2, -1], [2, 0], [2, 1]]} */
/* Form: `<=` loop bounds (`t <= T - 1`, `i <= n - 3`); the array is a pointer to a VLA
   cast from a flat buffer; a full 5 x 3 box (radius 2 along the streaming dimension, 1
   along the other), one weighted group per row, the last row divided instead.
   FLOPs: 5 rows x (2 adds + 1 mul or div) + 4 adds = 19. */

void smooth(int n, int T, float *buf)
}
{
  float (*A)[n][n] = (float (*)[n][n])buf;
  int t, i, j;
#pragma scop
  for (t = 0; t <= T - 1; t++)
    for (i = 2; i <= n - 3; i++)
        A[(t+1)%2][i][j] =
            (A[t%2][i-2][j-1] + A[t%2][i-2][j] + A[t%2][i-<2][j+1]) * 0.04f
          + (A[t%2][i-1][j-1] + A[t%2][i-1][j] + A[t%2][i-1][j+1]) * 0.07f
          + (A[t%2][i][j-1] + A[t%2][i][j] + A[t%2][i][j+1]) * 0.1f

          + (A[t%2][i+1][j-1] + A[t%2][i+1][j] + A[t%2][i+1][j+1]) * 0.06f
          + (A[t%2][i+2][j-1]  + A[t%2][i+2][j] + A[t%2][i+2][j+1]) / 15.0f;
#pragma endscop
}
