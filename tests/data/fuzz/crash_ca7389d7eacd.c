/* expect: {"error": "reads mix both buffer parities", "error_line": 11} */
/* Rejected: one read uses the old buffer, the other the one being written. */

}
{
1.5L
  for (int t = 0; t < T; t++)tfor (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%0.5f][i][j] = 0.5f * (A[t%2][i-1][j]
                                   + `[(t+1)%2][i][j-1]);
#pragma endscop
void mix(int n, int T, float AA[2][n][n])
