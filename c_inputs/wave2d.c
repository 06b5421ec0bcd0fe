/* wave2d: the 2D wave equation, second order in time over three time levels (p[(t+2)%3]
   from p[(t+1)%3] and p[t%3]), with a radius-2 (4th-order) Laplacian and a constant
   c^2 dt^2 / h^2 = 0.2f. The Laplacian's weights are -1/12, 4/3, -5/2 per dimension, each
   made distinct in its last digit (so a wrong offset changes the result), the centre's a
   little heavier than the others' sum so a constant field does not grow. Stability (CFL):
   the Laplacian's largest eigenvalue magnitude is 2 * 16/3 = 10.7 and 0.2 * 10.7 = 2.1 <
   4. BENCH_FPP 21: the Laplacian's 9 products and 8 additions, the product with 0.2f, and
   2.0f * p, the subtraction of p[t%3] and the final addition. */
#define BENCH_DIM 2
#define BENCH_FPP 21
#define BENCH_RAD 2
#define BENCH_LEVELS 3

#include "common.h"

double kernel_stencil(SB_TYPE *A1, int compsize, int timestep, bool scop)
{
  double start_time = sb_time();
  int dimsize = compsize + BENCH_RAD * 2;
  SB_TYPE (*p)[dimsize][dimsize] = (SB_TYPE (*)[dimsize][dimsize])A1;

  if (scop) {
#pragma scop
    for (int t = 0; t < timestep; t++)
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          p[(t+2)%3][i][j] = 2.0f * p[(t+1)%3][i][j] - p[t%3][i][j]
            + 0.2f * (1.3331f * p[(t+1)%3][i-1][j] + 1.3335f * p[(t+1)%3][i+1][j]
                      + 1.3332f * p[(t+1)%3][i][j-1] + 1.3336f * p[(t+1)%3][i][j+1]
                      - 0.0832f * p[(t+1)%3][i-2][j] - 0.0834f * p[(t+1)%3][i+2][j]
                      - 0.0833f * p[(t+1)%3][i][j-2] - 0.0835f * p[(t+1)%3][i][j+2]
                      - 5.0002f * p[(t+1)%3][i][j]);
#pragma endscop
  }
  else {
    for (int t = 0; t < timestep; t++)
#pragma omp parallel for
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          p[(t+2)%3][i][j] = 2.0f * p[(t+1)%3][i][j] - p[t%3][i][j]
            + 0.2f * (1.3331f * p[(t+1)%3][i-1][j] + 1.3335f * p[(t+1)%3][i+1][j]
                      + 1.3332f * p[(t+1)%3][i][j-1] + 1.3336f * p[(t+1)%3][i][j+1]
                      - 0.0832f * p[(t+1)%3][i-2][j] - 0.0834f * p[(t+1)%3][i+2][j]
                      - 0.0833f * p[(t+1)%3][i][j-2] - 0.0835f * p[(t+1)%3][i][j+2]
                      - 5.0002f * p[(t+1)%3][i][j]);
  }
  return sb_elapsed(start_time);
}
