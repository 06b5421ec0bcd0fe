/* varheat2d: explicit heat equation with a variable conductivity on a 2D grid, radius 1,
   two time buffers. kx[i][j] is the conductivity on the face between cells (i, j) and
   (i, j+1), ky[i][j] the one between (i, j) and (i+1, j) (two read-only arrays, read at
   staggered positions). 0.12f and 0.08f are dt/h^2 along j and i; with conductivities in
   [0.5, 1.5) every cell's own weight stays at least 0.4, so values stay within the range of
   the initial data. BENCH_FPP 14: per direction 2 differences, 2 products with a
   conductivity, 1 subtraction and 1 product with dt/h^2 (12), and 2 additions. */
#define BENCH_DIM 2
#define BENCH_FPP 14
#define BENCH_RAD 1
#define BENCH_COEFS 2

#include "common.h"

double kernel_stencil(SB_TYPE *A1, SB_TYPE *C1, int compsize, int timestep, bool scop)
{
  double start_time = sb_time();
  int dimsize = compsize + BENCH_RAD * 2;
  SB_TYPE (*A)[dimsize][dimsize] = (SB_TYPE (*)[dimsize][dimsize])A1;
  SB_TYPE (*kx)[dimsize] = (SB_TYPE (*)[dimsize])C1;
  SB_TYPE (*ky)[dimsize] = (SB_TYPE (*)[dimsize])(C1 + dimsize * dimsize);

  if (scop) {
#pragma scop
    for (int t = 0; t < timestep; t++)
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          A[(t+1)%2][i][j] = A[t%2][i][j]
            + 0.12f * (kx[i][j] * (A[t%2][i][j+1] - A[t%2][i][j])
                       - kx[i][j-1] * (A[t%2][i][j] - A[t%2][i][j-1]))
            + 0.08f * (ky[i][j] * (A[t%2][i+1][j] - A[t%2][i][j])
                       - ky[i-1][j] * (A[t%2][i][j] - A[t%2][i-1][j]));
#pragma endscop
  }
  else {
    for (int t = 0; t < timestep; t++)
#pragma omp parallel for
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          A[(t+1)%2][i][j] = A[t%2][i][j]
            + 0.12f * (kx[i][j] * (A[t%2][i][j+1] - A[t%2][i][j])
                       - kx[i][j-1] * (A[t%2][i][j] - A[t%2][i][j-1]))
            + 0.08f * (ky[i][j] * (A[t%2][i+1][j] - A[t%2][i][j])
                       - ky[i-1][j] * (A[t%2][i][j] - A[t%2][i-1][j]));
  }
  return sb_elapsed(start_time);
}
