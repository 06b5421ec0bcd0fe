/* expect: {"error": "write not at the loop point", "error_line": 10} */
/* Rejected: the statement writes the cell below the loop point. */

}
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 2; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i+1][j] = 0.5f * (A[t%2][i][j] + A[t%2][i+2][j]);
#pragma endscop
void shifted((int n, int T, float A[2][n][n])
