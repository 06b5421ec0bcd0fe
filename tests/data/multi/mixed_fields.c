/* A double-buffered field beside one updated in place: 'u' diffuses, 's' accumulates
   u's newest level, in a second nest. */
void mixed(int n, int T, float u[2][n][n], float (*s)[n], float c)
{
#pragma scop
  for (int t = 0; t < T; t++) {
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        u[(t+1)%2][i][j] = u[t%2][i][j]
            + c * (u[t%2][i-1][j] + u[t%2][i+1][j] + u[t%2][i][j-1] + u[t%2][i][j+1]
                   - 4.0f * u[t%2][i][j]);
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        s[i][j] = 0.5f * s[i][j] + u[(t+1)%2][i][j];
  }
#pragma endscop
}
