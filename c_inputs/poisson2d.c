/* poisson2d: Jacobi iteration for the Poisson equation -lap(u) = f with a right-hand side
   f[i][j] (a read-only array) on a 2D grid, radius 1, two time buffers. The four
   neighbours have distinct weights (they sum to 4) so that a wrong offset changes the
   result; 0.015625f is h^2. BENCH_FPP 10: 5 multiplications in the sum, 4 additions,
   and the final multiplication by 0.25f. */
#define BENCH_DIM 2
#define BENCH_FPP 10
#define BENCH_RAD 1
#define BENCH_COEFS 1

#include "common.h"

double kernel_stencil(SB_TYPE *A1, SB_TYPE *C1, int compsize, int timestep, bool scop)
{
  double start_time = sb_time();
  int dimsize = compsize + BENCH_RAD * 2;
  SB_TYPE (*A)[dimsize][dimsize] = (SB_TYPE (*)[dimsize][dimsize])A1;
  SB_TYPE (*f)[dimsize] = (SB_TYPE (*)[dimsize])C1;

  if (scop) {
#pragma scop
    for (int t = 0; t < timestep; t++)
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          A[(t+1)%2][i][j] =
            0.25f * (0.97f * A[t%2][i-1][j] + 0.99f * A[t%2][i][j-1] + 1.01f * A[t%2][i][j+1]
                     + 1.03f * A[t%2][i+1][j] + 0.015625f * f[i][j]);
#pragma endscop
  }
  else {
    for (int t = 0; t < timestep; t++)
#pragma omp parallel for
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          A[(t+1)%2][i][j] =
            0.25f * (0.97f * A[t%2][i-1][j] + 0.99f * A[t%2][i][j-1] + 1.01f * A[t%2][i][j+1]
                     + 1.03f * A[t%2][i+1][j] + 0.015625f * f[i][j]);
  }
  return sb_elapsed(start_time);
}
