/* reject: 8:36 | in-place update: A[(t+1)%2][i-1][j] reads the buffer it writes (A[(t+1)%2][i][j]) at offset [-1, 0] */
void f(int n, int T, float A[2][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = 0.5f * (A[(t+1)%2][i-1][j] + A[(t+1)%2][i][j-1]);
#pragma endscop
}
