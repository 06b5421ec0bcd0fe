/* expect: {"ndim": 3, "radius": [1, 2, 2], "shape": "star", "diagonal_free": true, "flops_per_cell": 21, "dtype": "double", "params": ["T", "nx", "ny", "nz"], "offsets": [[-1, 0, 0], [0, -2, 0], [0, -1, 0], [0, 0, -2], [0, 0, -1], [0, 0, 0], [0, 0, 1], [0, 0, 2], [0, 1, 0], [0, 2, 0], [1, 0, 0]], "opt": "nondiag", "loops": {"time": {"var": "t", "lower": "0", "upper": "T - 1", "buffers": 2}}} */
/* Form: a seismic wave update (leapfrog, two buffers: level t-1 read at the cell from the
   buffer written), radius 2 in the plane and 1 along the stream, a 3D velocity model read
   at the cell and a damping profile along the stream read one plane above; extents
   nz x ny x nx given separately. */

void seismic3d(int nz, int ny, int nx, int T, double u[2][nz][ny][nx],
               double vel[nz][ny][nx], double damp[nz])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int z = 1; z < nz - 1; z++)
      for (int y = 2; y < ny - 2; y++)
        for (int x = 2; x < nx - 2; x++)
          u[(t+1)%2][z][y][x] = (2.0 - damp[z+1]) * u[t%2][z][y][x] - u[(t+1)%2][z][y][x]
              + vel[z][y][x] * (0.21 * (u[t%2][z-1][y][x] + u[t%2][z+1][y][x])
                  + 0.19 * (u[t%2][z][y-1][x] + u[t%2][z][y+1][x])
                  + 0.18 * (u[t%2][z][y][x-1] + u[t%2][z][y][x+1])
                  - 0.017 * (u[t%2][z][y-2][x] + u[t%2][z][y+2][x])
                  - 0.016 * (u[t%2][z][y][x-2] + u[t%2][z][y][x+2])
                  - 1.126 * u[t%2][z][y][x]);
#pragma endscop
}
