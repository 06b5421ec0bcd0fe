/* reject: 8:28 | the outermost extent of read-only array 'c' is not declared */
void f(int n, int T, float A[2][n][n], float *c)
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = c[2] * A[t%2][i][j];
#pragma endscop
}
