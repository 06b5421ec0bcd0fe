/* reject: 8:30 | subscript 'i * j' is not affine */
void f(int n, int T, float A[2][n][n], float B[n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = B[i * j][j] * A[t%2][i][j];
#pragma endscop
}
