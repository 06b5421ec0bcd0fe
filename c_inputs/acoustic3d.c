/* acoustic3d: a 3D acoustic wave kernel in leapfrog form, radius 4 (an 8th-order
   Laplacian), with a velocity model vel[i][j][k] (a read-only array holding c^2 dt^2 / h^2
   per cell). Two time buffers hold the two time levels: u[(t+1)%2] holds the older level
   and is overwritten in place by the newer one, reading only its own cell. The
   Laplacian's weights are 8/5, -1/5, 8/315 and -1/560 per dimension and distance, each
   made distinct in its last digit (so a wrong offset changes the result), the centre's
   (-3 * 205/72) a little heavier than the others' sum so that a constant field does not
   grow. Stability (CFL): the Laplacian's largest eigenvalue magnitude is at most the sum of
   the weights' magnitudes, 19.51, and vel < 0.15 gives 2.93 < 4. BENCH_FPP 53: the
   Laplacian's 25 products and 24 additions, the product with vel, 2.0f * u, the
   subtraction of the older level and the final addition. */
#define BENCH_DIM 3
#define BENCH_FPP 53
#define BENCH_RAD 4
#define BENCH_LEVELS 2 /* both buffers hold a time level that the next step needs */
#define BENCH_COEFS 1
#define BENCH_COEF_LO 0.05
#define BENCH_COEF_HI 0.15

#include "common.h"

double kernel_stencil(SB_TYPE *A1, SB_TYPE *C1, int compsize, int timestep, bool scop)
{
  double start_time = sb_time();
  int dimsize = compsize + BENCH_RAD * 2;
  SB_TYPE (*u)[dimsize][dimsize][dimsize] = (SB_TYPE (*)[dimsize][dimsize][dimsize])A1;
  SB_TYPE (*vel)[dimsize][dimsize] = (SB_TYPE (*)[dimsize][dimsize])C1;

  if (scop) {
#pragma scop
    for (int t = 0; t < timestep; t++)
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          for (int k = BENCH_RAD; k < dimsize - BENCH_RAD; k++)
            u[(t+1)%2][i][j][k] = 2.0f * u[t%2][i][j][k] - u[(t+1)%2][i][j][k]
              + vel[i][j][k] * (1.5997f * u[t%2][i-1][j][k] + 1.6003f * u[t%2][i+1][j][k]
                                + 1.5998f * u[t%2][i][j-1][k] + 1.6002f * u[t%2][i][j+1][k]
                                + 1.5999f * u[t%2][i][j][k-1] + 1.6001f * u[t%2][i][j][k+1]
                                - 0.1997f * u[t%2][i-2][j][k] - 0.2003f * u[t%2][i+2][j][k]
                                - 0.1998f * u[t%2][i][j-2][k] - 0.2002f * u[t%2][i][j+2][k]
                                - 0.1999f * u[t%2][i][j][k-2] - 0.2001f * u[t%2][i][j][k+2]
                                + 0.02537f * u[t%2][i-3][j][k] + 0.02543f * u[t%2][i+3][j][k]
                                + 0.02538f * u[t%2][i][j-3][k] + 0.02542f * u[t%2][i][j+3][k]
                                + 0.02539f * u[t%2][i][j][k-3] + 0.02541f * u[t%2][i][j][k+3]
                                - 0.001783f * u[t%2][i-4][j][k] - 0.001789f * u[t%2][i+4][j][k]
                                - 0.001784f * u[t%2][i][j-4][k] - 0.001788f * u[t%2][i][j+4][k]
                                - 0.001785f * u[t%2][i][j][k-4] - 0.001787f * u[t%2][i][j][k+4]
                                - 8.5417f * u[t%2][i][j][k]);
#pragma endscop
  }
  else {
    for (int t = 0; t < timestep; t++)
#pragma omp parallel for
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          for (int k = BENCH_RAD; k < dimsize - BENCH_RAD; k++)
            u[(t+1)%2][i][j][k] = 2.0f * u[t%2][i][j][k] - u[(t+1)%2][i][j][k]
              + vel[i][j][k] * (1.5997f * u[t%2][i-1][j][k] + 1.6003f * u[t%2][i+1][j][k]
                                + 1.5998f * u[t%2][i][j-1][k] + 1.6002f * u[t%2][i][j+1][k]
                                + 1.5999f * u[t%2][i][j][k-1] + 1.6001f * u[t%2][i][j][k+1]
                                - 0.1997f * u[t%2][i-2][j][k] - 0.2003f * u[t%2][i+2][j][k]
                                - 0.1998f * u[t%2][i][j-2][k] - 0.2002f * u[t%2][i][j+2][k]
                                - 0.1999f * u[t%2][i][j][k-2] - 0.2001f * u[t%2][i][j][k+2]
                                + 0.02537f * u[t%2][i-3][j][k] + 0.02543f * u[t%2][i+3][j][k]
                                + 0.02538f * u[t%2][i][j-3][k] + 0.02542f * u[t%2][i][j+3][k]
                                + 0.02539f * u[t%2][i][j][k-3] + 0.02541f * u[t%2][i][j][k+3]
                                - 0.001783f * u[t%2][i-4][j][k] - 0.001789f * u[t%2][i+4][j][k]
                                - 0.001784f * u[t%2][i][j-4][k] - 0.001788f * u[t%2][i][j+4][k]
                                - 0.001785f * u[t%2][i][j][k-4] - 0.001787f * u[t%2][i][j][k+4]
                                - 8.5417f * u[t%2][i][j][k]);
  }
  return sb_elapsed(start_time);
}
