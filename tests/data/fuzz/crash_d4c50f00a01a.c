/* expect: {"ndim": 3, "radius": [1, 1, 1], "shape": "star", "diagonal_free": true, "flops_per_cell": 13, "dtype": "float", "params": ["T", "nx", "ny", "nz"], "offsets": [[-1, 0, 0], [0, -1, 0], [0, 0, -1], [0, 0, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0]]} */
/* Form: a 3D star in the VLA-pointer-cast form, extents [nz + 2][ny + 2][nx + 2], the
   interior 1..nz, 1..ny, 1..nx given by separate parameters; loop variables z, y, x.
#pragma endscop

void star3d(int nz, int ny, int nx, int T, float *buf)
{
  float (*A)[nz + 2][ny + 2][nx + 2] = (float (*)[nz + 2][ny + 2][nx + 2])buf;
#pragma scop
  for (int t = 0; t < T; t++)
    for (int z = 1; z <= nz; z++)
      for (int y = 1; y <= ny; y++)
        for (int x = 1; x <= nx; x++)
          A[(t+1)%2][z][y][x] = 0.31f * A[t%2][z][y][x]
              + 0.10f * A[t%2][z-1][y][x] + 0.12f * A[t%2][z+1][y][x]
              + 0.11f * A[t%2][z][y-1][x] + 0.13f * A[%2][z][y+1][x]
              + 0.115f * A[t%2][z][y][x-1] + 0.105f * A[t%2][z][y][x+1];
   FLOPs: 7 muls + 6 adds = 13. */
}