/* reject: 8:47 | p[(t+2)%3][i][j] reads level t-2 of 'p' (the buffer it writes, read at the cell before the store, still holds level t-2) */
void f(int n, int T, float p[3][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        p[(t+2)%3][i][j] = p[(t+1)%3][i][j] - p[(t+2)%3][i][j];
#pragma endscop
}
