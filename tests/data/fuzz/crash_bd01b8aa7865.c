/* expect: {"error": "non-constant offset: A[t%2][2*i][j]", "error_line": 11} */
/*ĺejected: a strided read (2*i) is not at a constant offset from the written cell. */

void strided(int n, int}, float A[2][ƶ * n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
  for (int t = 0; t < T; t++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = 0.5f * A[t%2][i][j]
                         + 0.5f * A[t%2][2 * i][j];
#pragma endscop
}
