/* reject: 8:27 | in-place update: A[i-1][j] reads a neighbour of the cell A[i][j] writes */
void f(int n, int T, float A[n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[i][j] = 0.5f * (A[i-1][j] + A[i][j-1]);
#pragma endscop
}
