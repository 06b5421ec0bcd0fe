/* grayscott2d: Gray-Scott reaction-diffusion on a 2D grid, two coupled fields u and v,
   each double-buffered, radius 1; one loop nest with two statements, both reading u[t%2]
   and v[t%2]:
     u' = u + dt (Du lap(u) - u v^2 + F (1 - u))
     v' = v + dt (Dv lap(v) + u v^2 - (F + k) v)
   with Du = 0.16, Dv = 0.08 (the 5-point Laplacians' weights, each made distinct in its
   last digit so that a wrong offset changes the result, the centre's the exact sum of the
   others' so a constant field does not diffuse), F = 0.06, k = 0.04 (F + k = 0.1f) and
   dt = 0.25. Why these: the random initial data (u and v in [0.5, 1.5)) start far above
   the usual u = 1, v = 0, and with dt = 1 (or 0.5 on larger grids) the reaction u v^2
   overshoots (u goes negative, then v) and the values blow up within a few steps; dt =
   0.25 keeps them in about [-0.2, 3] and the diffusion's weight dt Du 4 = 0.16 well below
   1. F and k have F > 4 (F + k)^2, so a uniform state with v > 0 exists (u = 0.21, v =
   0.47) and the interior settles there instead of decaying to v = 0, which would reach
   subnormal numbers in float after a few thousand steps. BENCH_FPP 33: u's statement 17
   (the Laplacian's 5 products and 4 additions, u v^2 and its subtraction (3), the feed's
   subtraction, product and addition (3), the product with dt and the addition to u),
   v's 16 (the Laplacian's 9, u v^2 and its addition (3), the product with F + k and its
   subtraction, the product with dt and the addition to v). */
#define BENCH_DIM 2
#define BENCH_FPP 33
#define BENCH_RAD 1
#define BENCH_FIELDS 2

#include "common.h"

double kernel_stencil(SB_TYPE *A1, int compsize, int timestep, bool scop)
{
  double start_time = sb_time();
  int dimsize = compsize + BENCH_RAD * 2;
  size_t cells = (size_t)dimsize * (size_t)dimsize;
  SB_TYPE (*u)[dimsize][dimsize] = (SB_TYPE (*)[dimsize][dimsize])A1;
  SB_TYPE (*v)[dimsize][dimsize] = (SB_TYPE (*)[dimsize][dimsize])(A1 + 2 * cells);

  if (scop) {
#pragma scop
    for (int t = 0; t < timestep; t++)
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++) {
          u[(t+1)%2][i][j] = u[t%2][i][j]
            + 0.25f * (0.1601f * u[t%2][i-1][j] + 0.1602f * u[t%2][i+1][j]
                       + 0.1599f * u[t%2][i][j-1] + 0.1598f * u[t%2][i][j+1]
                       - 0.64f * u[t%2][i][j]
                       - u[t%2][i][j] * v[t%2][i][j] * v[t%2][i][j]
                       + 0.06f * (1.0f - u[t%2][i][j]));
          v[(t+1)%2][i][j] = v[t%2][i][j]
            + 0.25f * (0.0801f * v[t%2][i-1][j] + 0.0802f * v[t%2][i+1][j]
                       + 0.0799f * v[t%2][i][j-1] + 0.0798f * v[t%2][i][j+1]
                       - 0.32f * v[t%2][i][j]
                       + u[t%2][i][j] * v[t%2][i][j] * v[t%2][i][j]
                       - 0.1f * v[t%2][i][j]);
        }
#pragma endscop
  }
  else {
    for (int t = 0; t < timestep; t++)
#pragma omp parallel for
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++) {
          u[(t+1)%2][i][j] = u[t%2][i][j]
            + 0.25f * (0.1601f * u[t%2][i-1][j] + 0.1602f * u[t%2][i+1][j]
                       + 0.1599f * u[t%2][i][j-1] + 0.1598f * u[t%2][i][j+1]
                       - 0.64f * u[t%2][i][j]
                       - u[t%2][i][j] * v[t%2][i][j] * v[t%2][i][j]
                       + 0.06f * (1.0f - u[t%2][i][j]));
          v[(t+1)%2][i][j] = v[t%2][i][j]
            + 0.25f * (0.0801f * v[t%2][i-1][j] + 0.0802f * v[t%2][i+1][j]
                       + 0.0799f * v[t%2][i][j-1] + 0.0798f * v[t%2][i][j+1]
                       - 0.32f * v[t%2][i][j]
                       + u[t%2][i][j] * v[t%2][i][j] * v[t%2][i][j]
                       - 0.1f * v[t%2][i][j]);
        }
  }
  return sb_elapsed(start_time);
}
