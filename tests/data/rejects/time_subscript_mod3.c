/* reject: 8:28 | A[t%3][i][j] selects its time buffer modulo 3 but the statement writes A[(t+1)%2][i][j] modulo 2: every access of A must rotate through the same buffers ((t + c) % 2) */
void f(int n, int T, float A[2][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = A[t % 3][i][j];
#pragma endscop
}
