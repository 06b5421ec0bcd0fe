/* reject: 9:5 | imperfect loop nest: 'ey[0][0] = x' beside the spatial loop nest over 'i' in the body of time loop 't' */
void f(int n, int T, float ey[n][n], float hz[n][n], float x)
{
#pragma scop
  for (int t = 0; t < T; t++) {
    for (int i = 1; i < n; i++)
      for (int j = 0; j < n; j++)
        ey[i][j] = ey[i][j] - 0.5f * (hz[i][j] - hz[i-1][j]);
    ey[0][0] = x;
  }
#pragma endscop
}
