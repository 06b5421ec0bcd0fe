/* Gray-Scott reaction-diffusion: two double-buffered fields, one nest, two statements. */
void gray_scott(int n, int T, float u[2][n][n], float v[2][n][n])
{
  int t, i, j;
#pragma scop
  for (t = 0; t < T; t++)
    for (i = 1; i < n - 1; i++)
      for (j = 1; j < n - 1; j++) {
        u[(t+1)%2][i][j] = u[t%2][i][j]
            + 0.2f * (u[t%2][i-1][j] + u[t%2][i+1][j] - 4.0f * u[t%2][i][j]
                      + u[t%2][i][j-1] + u[t%2][i][j+1])
            - u[t%2][i][j] * v[t%2][i][j] * v[t%2][i][j] + 0.03f * (1.0f - u[t%2][i][j]);
        v[(t+1)%2][i][j] = v[t%2][i][j]
            + 0.1f * (v[t%2][i-1][j] + v[t%2][i+1][j] - 4.0f * v[t%2][i][j]
                      + v[t%2][i][j-1] + v[t%2][i][j+1])
            + u[t%2][i][j] * v[t%2][i][j] * v[t%2][i][j] - 0.09f * v[t%2][i][j];
      }
#pragma endscop
}
