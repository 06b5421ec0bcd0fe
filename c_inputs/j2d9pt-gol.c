#define BENCH_DIM 2
#define BENCH_FPP 18
#define BENCH_RAD 1

#include "common.h"

double kernel_stencil(SB_TYPE *A1, int compsize, int timestep, bool scop)
{
  double start_time = sb_time();
  int dimsize = compsize + BENCH_RAD * 2;
  SB_TYPE (*A)[dimsize][dimsize] = (SB_TYPE (*)[dimsize][dimsize])A1;

  if (scop) {
#pragma scop
    for (int t = 0; t < timestep; t++)
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          A[(t+1)%2][i][j] =
            (1.04f * A[t%2][i-1][j-1] + 1.105f * A[t%2][i-1][j] + 1.17f * A[t%2][i-1][j+1]
             + 1.235f * A[t%2][i][j-1] + 1.3f * A[t%2][i][j] + 1.365f * A[t%2][i][j+1]
             + 1.43f * A[t%2][i+1][j-1] + 1.495f * A[t%2][i+1][j] + 1.56f * A[t%2][i+1][j+1]) / 11.7f;
#pragma endscop
  }
  else {
    for (int t = 0; t < timestep; t++)
#pragma omp parallel for
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          A[(t+1)%2][i][j] =
            (1.04f * A[t%2][i-1][j-1] + 1.105f * A[t%2][i-1][j] + 1.17f * A[t%2][i-1][j+1]
             + 1.235f * A[t%2][i][j-1] + 1.3f * A[t%2][i][j] + 1.365f * A[t%2][i][j+1]
             + 1.43f * A[t%2][i+1][j-1] + 1.495f * A[t%2][i+1][j] + 1.56f * A[t%2][i+1][j+1]) / 11.7f;
  }
  return sb_elapsed(start_time);
}
