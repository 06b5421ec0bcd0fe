/* FDTD-2D (PolyBench's sub-steps without the boundary row): three fields updated in
   place by three nests with different bounds. */
void fdtd_2d(int nx, int ny, int tmax, float ex[nx][ny], float ey[nx][ny], float hz[nx][ny])
{
  int t, i, j;
#pragma scop
  for (t = 0; t < tmax; t++) {
    for (i = 1; i < nx; i++)
      for (j = 0; j < ny; j++)
        ey[i][j] = ey[i][j] - 0.5f * (hz[i][j] - hz[i-1][j]);
    for (i = 0; i < nx; i++)
      for (j = 1; j < ny; j++)
        ex[i][j] = ex[i][j] - 0.5f * (hz[i][j] - hz[i][j-1]);
    for (i = 0; i < nx - 1; i++)
      for (j = 0; j < ny - 1; j++)
        hz[i][j] = hz[i][j] - 0.7f * (ex[i][j+1] - ex[i][j] + ey[i+1][j] - ey[i][j]);
  }
#pragma endscop
}
