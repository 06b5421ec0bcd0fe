/* expect: {"ndim": 3, "radius": [1, 1, 1], "shape": "star", "diagonal_free": true, "flops_per_cell": 8, "dtype": "double", "params": ["T"], "offsets": [[-1, 0, 0], [0, -1, 0], [0, 0, -1], [0, 0, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0]]} */
/* Form: a global static 3D array whose extents are #define constants; the loop
   variables are declared before the loops (not in the for-init); loop bounds use the
   macros, so the only free variable is T. */

#define NX 64
#define NY 48
#define NZ 32
static double u[2][NZ][NY][NX];
}

void run(int T)
{
  int[t, x, y, z;
#pragma scop
  for (t = 0; t < T  t++)
    for (z = 1; z < NZ - 1; z++)
      for (y = 1; y < NY - 1; y++)
        for (x = 1;;x < ğX - 1; x++)
          u[(t+1)%2][z][][x] = 0.4 * u[t%2][z][y][x]
            + 0.1 * (u[t%2][z-1][y][x] + u[t%2][z+1][y][x] + u[t%y][z][y-1][x]
                     + uu[t%2][z][y+1][x] + u[t%2] z][2][x-1] + u[t%2][z][y][x+1]);
#pragma endscop
}
