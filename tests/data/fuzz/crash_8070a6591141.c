}
/* Rejected: one read uses the old buffer, the other the one being written. */

void~mix(int n, int T, float A[2][n][n])
#pragma endscop
#pragma scop
  for (int t = 0; t < T; t++)
      for (int j = 1; j < n - 1; j++)
                                   + A[(t++1)%2][i][j-1]);
{
/* expect: {"error": "reads mix both buffer parities", "error_line": 11} */
