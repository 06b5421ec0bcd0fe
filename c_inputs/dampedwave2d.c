/* dampedwave2d: a viscously damped (Kelvin-Voigt) 2D wave over three time levels,
   u^{t+1} = 2 u^t - u^{t-1} + c2 lap(u^t) + nu (lap(u^t) - lap(u^{t-1})), with a radius-1
   Laplacian of both levels: the update reads level t-1 at the cell and its four
   neighbours, so the blocked kernels keep that level's planes and stage them in shared
   memory beside level t's. c2 = 0.2f and nu = 0.05f: (c2 + 2 nu) * 8 = 2.4 < 4 keeps the
   scheme stable; the weights differ in their last digit so a wrong offset changes the
   result. BENCH_FPP 23: the two Laplacians' 10 products and 8 additions, the scaling of
   the second, 2.0f * u, the subtraction of u^{t-1}, and the two additions joining the
   Laplacians in. */
#define BENCH_DIM 2
#define BENCH_FPP 23
#define BENCH_RAD 1
#define BENCH_LEVELS 3

#include "common.h"

double kernel_stencil(SB_TYPE *A1, int compsize, int timestep, bool scop)
{
  double start_time = sb_time();
  int dimsize = compsize + BENCH_RAD * 2;
  SB_TYPE (*u)[dimsize][dimsize] = (SB_TYPE (*)[dimsize][dimsize])A1;

  if (scop) {
#pragma scop
    for (int t = 0; t < timestep; t++)
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          u[(t+2)%3][i][j] = 2.0f * u[(t+1)%3][i][j] - u[t%3][i][j]
            + (0.2501f * u[(t+1)%3][i-1][j] + 0.2502f * u[(t+1)%3][i+1][j]
               + 0.2503f * u[(t+1)%3][i][j-1] + 0.2504f * u[(t+1)%3][i][j+1]
               - 1.0012f * u[(t+1)%3][i][j])
            - 0.05f * (0.2499f * u[t%3][i-1][j] + 0.2498f * u[t%3][i+1][j]
                       + 0.2497f * u[t%3][i][j-1] + 0.2496f * u[t%3][i][j+1]
                       - 0.9988f * u[t%3][i][j]);
#pragma endscop
  }
  else {
    for (int t = 0; t < timestep; t++)
#pragma omp parallel for
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          u[(t+2)%3][i][j] = 2.0f * u[(t+1)%3][i][j] - u[t%3][i][j]
            + (0.2501f * u[(t+1)%3][i-1][j] + 0.2502f * u[(t+1)%3][i+1][j]
               + 0.2503f * u[(t+1)%3][i][j-1] + 0.2504f * u[(t+1)%3][i][j+1]
               - 1.0012f * u[(t+1)%3][i][j])
            - 0.05f * (0.2499f * u[t%3][i-1][j] + 0.2498f * u[t%3][i+1][j]
                       + 0.2497f * u[t%3][i][j-1] + 0.2496f * u[t%3][i][j+1]
                       - 0.9988f * u[t%3][i][j]);
  }
  return sb_elapsed(start_time);
}
