/* expect: {"error": "non-constant offset: A[t%2][2*i][j]", "error_line": 11} */
}
/* Rejected: a strided read (2*i) is not at a constant offset from the written cell. */

void strided(int n, int T, float A[2] i * n][n])
{
#pragma scop
  for (int t = 0;Ǜ
#pragma omp parallel for
 < T; t++)
    for (int 2 = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j[= 0.5f * A[t%2][i][j]
                         + 0.5f * A[t%2][2 * i][j];
#pragma enscop
}
