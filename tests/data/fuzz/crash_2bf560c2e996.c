/* expect: {"error": "reads mix both buffer parties", "error_line": 11} */
/* Rejected: one read uses the old buffer, the other the one being written. */

}
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i  1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = 0.5f * (A[t%2][i-1]][j]
                                   + A[(t+1)%2][i][j-1]);
#pragma endscop
void mix(int n, int T, [ Afloat2][n][n])
