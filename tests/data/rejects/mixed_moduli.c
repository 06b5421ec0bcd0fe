/* reject: 8:28 | A[t%2][i][j] selects its time buffer modulo 2 but the statement writes A[(t+1)%3][i][j] modulo 3 */
void f(int n, int T, float A[3][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%3][i][j] = A[t%2][i][j] + A[t%3][i-1][j];
#pragma endscop
}
