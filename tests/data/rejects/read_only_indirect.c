/* reject: 8:30 | data-dependent (indirect) index 'idx[i]' */
void f(int n, int T, float A[2][n][n], float c[n], int idx[n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = c[idx[i]] * A[t%2][i][j];
#pragma endscop
}
