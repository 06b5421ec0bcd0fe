/* reject: 2:28 | array p has a time dimension of extent 2 but its accesses rotate through 3 buffers (p[(t+2)%3][i][j]): declare it with 3 time buffers ([3]) */
void f(int n, int T, float p[2][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        p[(t+2)%3][i][j] = 2.0f * p[(t+1)%3][i][j] - p[t%3][i][j];
#pragma endscop
}
