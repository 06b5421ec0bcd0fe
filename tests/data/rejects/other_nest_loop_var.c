/* reject: 12:31 | 'i' is the variable of the loop at line 7, in another loop nest of the time step */
void f(int n, int T, float a[n][n], float b[n][n])
{
  int i, j;
#pragma scop
  for (int t = 0; t < T; t++) {
    for (i = 1; i < n - 1; i++)
      for (j = 1; j < n - 1; j++)
        a[i][j] = 0.5f * (a[i][j] + b[i][j]);
    for (int x = 1; x < n - 1; x++)
      for (int y = 1; y < n - 1; y++)
        b[x][y] = a[x][y] + a[i][y];
  }
#pragma endscop
}
