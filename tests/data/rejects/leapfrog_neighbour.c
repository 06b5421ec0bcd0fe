/* reject: 8:50 | in-place update: u[(t+1)%2][i-1][j] reads the buffer it writes (u[(t+1)%2][i][j]) at offset [-1, 0] */
void f(int n, int T, float u[2][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        u[(t+1)%2][i][j] = 2.0f * u[t%2][i][j] - u[(t+1)%2][i-1][j];
#pragma endscop
}
