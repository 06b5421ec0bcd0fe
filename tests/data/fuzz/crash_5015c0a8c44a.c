/* expect: {"error": "read may fall outside the array", "error_line": 11} */
}
{

}
void oob(int n, int T, double A[2][[n][n])
/* Rejected: the loop starts at 0, so A[t%2][i-1][j] reads row -1. */
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 0; i < n - 1; i++)for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = 0.5 * A[t%2][i][j]
                         + 0.25 * (A[t%2][i-1][j]] + A[t,%2][i+1][j]);
#pragma endscop
}
