/* heat3dz: explicit 3D heat equation (7 points, radius 1) with a per-plane diffusivity
   cz[i] along the streaming dimension (a read-only array of rank 1: the first dimsize
   elements of the coefficient buffer), e.g. a conductivity that varies with depth. The six
   neighbours have distinct weights (they sum to 6); with cz in [0.05, 0.15) the cell's own
   weight stays at least 1 - 6 * 0.15 = 0.1, so values stay within the range of the initial
   data. BENCH_FPP 15: 7 products and 6 additions in the sum, the product with cz and the
   final addition. */
#define BENCH_DIM 3
#define BENCH_FPP 15
#define BENCH_RAD 1
#define BENCH_COEFS 1
#define BENCH_COEF_LO 0.05
#define BENCH_COEF_HI 0.15

#include "common.h"

double kernel_stencil(SB_TYPE *A1, SB_TYPE *C1, int compsize, int timestep, bool scop)
{
  double start_time = sb_time();
  int dimsize = compsize + BENCH_RAD * 2;
  SB_TYPE (*A)[dimsize][dimsize][dimsize] = (SB_TYPE (*)[dimsize][dimsize][dimsize])A1;
  SB_TYPE *cz = C1;

  if (scop) {
#pragma scop
    for (int t = 0; t < timestep; t++)
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          for (int k = BENCH_RAD; k < dimsize - BENCH_RAD; k++)
            A[(t+1)%2][i][j][k] = A[t%2][i][j][k]
              + cz[i] * (0.97f * A[t%2][i-1][j][k] + 1.03f * A[t%2][i+1][j][k]
                         + 0.98f * A[t%2][i][j-1][k] + 1.02f * A[t%2][i][j+1][k]
                         + 0.99f * A[t%2][i][j][k-1] + 1.01f * A[t%2][i][j][k+1]
                         - 6.0f * A[t%2][i][j][k]);
#pragma endscop
  }
  else {
    for (int t = 0; t < timestep; t++)
#pragma omp parallel for
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          for (int k = BENCH_RAD; k < dimsize - BENCH_RAD; k++)
            A[(t+1)%2][i][j][k] = A[t%2][i][j][k]
              + cz[i] * (0.97f * A[t%2][i-1][j][k] + 1.03f * A[t%2][i+1][j][k]
                         + 0.98f * A[t%2][i][j-1][k] + 1.02f * A[t%2][i][j+1][k]
                         + 0.99f * A[t%2][i][j][k-1] + 1.01f * A[t%2][i][j][k+1]
                         - 6.0f * A[t%2][i][j][k]);
  }
  return sb_elapsed(start_time);
}
