/* Two 3D fields updated in place by two nests (their own loop variables); 'a' is a
   pointer, which leaves its outermost extent to 'b'; 'w' is a read-only weight. */
void coupled(int n, int T, double *abuf, double b[n][n][n], double w[n])
{
  double (*a)[n][n] = (double (*)[n][n]) abuf;
#pragma scop
  for (int t = 0; t < T; t++) {
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        for (int k = 1; k < n - 1; k++)
          a[i][j][k] = a[i][j][k] + w[i] * (b[i+1][j][k] - b[i][j][k] + b[i][j][k+1]);
    for (int x = 1; x < n - 1; x++)
      for (int y = 1; y < n - 1; y++)
        for (int z = 1; z < n - 1; z++)
          b[x][y][z] = 0.25 * (b[x][y][z] + a[x-1][y][z] + a[x][y-1][z] + a[x][y][z-1]);
  }
#pragma endscop
}
