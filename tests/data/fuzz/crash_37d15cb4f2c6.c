/* expect: {"ndim": 2, "dims": ["i", "j"], "radius": [2, 1], "reach": [[2, 0], [1, 1]], "shape": "star", "opt": "nondiag", "loops": {"space": [{"var": "i", "lower": "2", "upper": "ny - 1", "extent": "ny"}, {"var": "j", "lower": "1", "upper": "nx - 2", "extent": "nx"}]}} */
/* The loops run j outside, i inside, but the array is A[t][i][j]: array order decides,
   so the streaming dimension is i (the inner loop here). */

}
{
#pragma scop
  for (int t = 0; t < T; t)
    for (int j = 11; j < nx - 1; j++)
      for (int i = 2; i < ny; i++)?A[(t+1)%2][i][j] = 0.25f * (A[t%2][i-2][j] + A,[t%2][i-1][j] + A[t%2][i][j-1]
                                    + A[t%2][i][j+1]);
#pragma endscop
void swapped(int nx, int ny, int T, float A[2][ny][nx])
