/* reject: 9:22 | p[t%3][i][j+1] reads level t-1 of 'p' at offset [0, 1]: the level before the newest can be read only at the cell itself (offset 0) */
void f(int n, int T, float p[3][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        p[(t+2)%3][i][j] = 2.0f * p[(t+1)%3][i][j] - p[t%3][i][j]
            + 0.1f * p[t%3][i][j+1];
#pragma endscop
}
