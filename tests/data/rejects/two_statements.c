/* reject: 8:44 | the statement writes 'n'; each statement of the innermost body must be an assignment */
void f(int n, int T, float A[2][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        { A[(t+1)%2][i][j] = A[t%2][i][j]; n = 2; }
#pragma endscop
}
