/* fdtd2d: PolyBench's fdtd-2d (2D finite-difference time domain, the Yee scheme for a TE
   wave) without its source row ey[0][j] = _fict_[t]: three fields ex, ey, hz, each updated
   in place (no time dimension), in three loop nests per time step with PolyBench's bounds
   on n x n arrays (n = dimsize):
     ey[i][j] -= 0.5 (hz[i][j] - hz[i-1][j])                       1 <= i < n, 0 <= j < n
     ex[i][j] -= 0.5 (hz[i][j] - hz[i][j-1])                       0 <= i < n, 1 <= j < n
     hz[i][j] -= 0.7 (ex[i][j+1] - ex[i][j] + ey[i+1][j] - ey[i][j])   0 <= i, j < n - 1
   so every read stays inside the arrays, and hz reads the ex and ey this step wrote (the
   leapfrog of E and H). The untouched cells (ey's row 0, ex's column 0, hz's last row and
   column) keep their initial values. Stability: the scheme's Courant condition in 2D is
   0.5 * 0.7 = 0.35 <= 1/2, and hz stays within a few units of the initial data; only ey's
   last column and ex's last row, which the nests write but never read, drift, each cell by
   a constant of at most 0.5 per step (the difference of two fixed hz values), so after
   thousands of steps they are still a few thousand. BENCH_FPP 11: ey's and ex's statements
   3 each (a difference, the product with 0.5f, the subtraction), hz's 5 (three additions
   and subtractions, the product with 0.7f, the subtraction). */
#define BENCH_DIM 2
#define BENCH_FPP 11
#define BENCH_RAD 1
#define BENCH_FIELDS 3
#define BENCH_IN_PLACE 1

#include "common.h"

double kernel_stencil(SB_TYPE *A1, int compsize, int timestep, bool scop)
{
  double start_time = sb_time();
  int dimsize = compsize + BENCH_RAD * 2;
  size_t cells = (size_t)dimsize * (size_t)dimsize;
  SB_TYPE (*ex)[dimsize] = (SB_TYPE (*)[dimsize])A1;
  SB_TYPE (*ey)[dimsize] = (SB_TYPE (*)[dimsize])(A1 + cells);
  SB_TYPE (*hz)[dimsize] = (SB_TYPE (*)[dimsize])(A1 + 2 * cells);

  if (scop) {
#pragma scop
    for (int t = 0; t < timestep; t++) {
      for (int i = 1; i < dimsize; i++)
        for (int j = 0; j < dimsize; j++)
          ey[i][j] = ey[i][j] - 0.5f * (hz[i][j] - hz[i-1][j]);
      for (int i = 0; i < dimsize; i++)
        for (int j = 1; j < dimsize; j++)
          ex[i][j] = ex[i][j] - 0.5f * (hz[i][j] - hz[i][j-1]);
      for (int i = 0; i < dimsize - 1; i++)
        for (int j = 0; j < dimsize - 1; j++)
          hz[i][j] = hz[i][j] - 0.7f * (ex[i][j+1] - ex[i][j] + ey[i+1][j] - ey[i][j]);
    }
#pragma endscop
  }
  else {
    for (int t = 0; t < timestep; t++) {
#pragma omp parallel for
      for (int i = 1; i < dimsize; i++)
        for (int j = 0; j < dimsize; j++)
          ey[i][j] = ey[i][j] - 0.5f * (hz[i][j] - hz[i-1][j]);
#pragma omp parallel for
      for (int i = 0; i < dimsize; i++)
        for (int j = 1; j < dimsize; j++)
          ex[i][j] = ex[i][j] - 0.5f * (hz[i][j] - hz[i][j-1]);
#pragma omp parallel for
      for (int i = 0; i < dimsize - 1; i++)
        for (int j = 0; j < dimsize - 1; j++)
          hz[i][j] = hz[i][j] - 0.7f * (ex[i][j+1] - ex[i][j] + ey[i+1][j] - ey[i][j]);
    }
  }
  return sb_elapsed(start_time);
}
