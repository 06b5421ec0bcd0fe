/* reject: 8:47 | p[t%4][i][j] reads level t-2 of 'p': an5dpy supports reads of the two newest earlier levels (t and t-1) only */
void f(int n, int T, float p[4][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        p[(t+3)%4][i][j] = p[(t+2)%4][i][j] - p[t%4][i][j];
#pragma endscop
}
