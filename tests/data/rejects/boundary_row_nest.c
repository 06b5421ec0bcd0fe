/* reject: 6:5 | the loop nest over 'j' has 1 spatial loop but the nest over 'i' (line 8) has 2: every nest of a time step must have the same depth */
void f(int n, int T, float ey[n][n], float hz[n][n], float *fict)
{
#pragma scop
  for (int t = 0; t < T; t++) {
    for (int j = 0; j < n; j++)
      ey[0][j] = fict[t];
    for (int i = 1; i < n; i++)
      for (int j = 0; j < n; j++)
        ey[i][j] = ey[i][j] - 0.5f * (hz[i][j] - hz[i-1][j]);
  }
#pragma endscop
}
