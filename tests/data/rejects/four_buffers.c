/* reject: 8:9 | p[(t+3)%4][i][j] rotates 'p' through 4 time buffers: an5dpy supports at most 3 time buffers */
void f(int n, int T, float p[4][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        p[(t+3)%4][i][j] = 0.5f * (p[(t+2)%4][i-1][j] + p[(t+2)%4][i+1][j]);
#pragma endscop
}
