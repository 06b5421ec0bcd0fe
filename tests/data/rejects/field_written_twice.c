/* reject: 10:9 | 'hz' is written by two statements (the first at line 7); each field must be written by exactly one statement per time step */
void f(int n, int T, float ey[n][n], float hz[n][n])
{
#pragma scop
  for (int t = 0; t < T; t++) {
    for (int i = 1; i < n; i++) for (int j = 0; j < n; j++)
      hz[i][j] = hz[i][j] - 0.5f * (ey[i][j] - ey[i-1][j]);
    for (int i = 1; i < n; i++) for (int j = 0; j < n; j++) {
        ey[i][j] = ey[i][j] - 0.5f * (hz[i][j] - hz[i-1][j]);
        hz[i][j] = 0.0f;
    }
  }
#pragma endscop
}
