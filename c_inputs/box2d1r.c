#define BENCH_DIM 2
#define BENCH_FPP 17
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
            0.0887f * A[t%2][i-1][j-1] + 0.0943f * A[t%2][i-1][j] + 0.0999f * A[t%2][i-1][j+1]
            + 0.1055f * A[t%2][i][j-1] + 0.1111f * A[t%2][i][j] + 0.1167f * A[t%2][i][j+1]
            + 0.1223f * A[t%2][i+1][j-1] + 0.1279f * A[t%2][i+1][j] + 0.1335f * A[t%2][i+1][j+1];
#pragma endscop
  }
  else {
    for (int t = 0; t < timestep; t++)
#pragma omp parallel for
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          A[(t+1)%2][i][j] =
            0.0887f * A[t%2][i-1][j-1] + 0.0943f * A[t%2][i-1][j] + 0.0999f * A[t%2][i-1][j+1]
            + 0.1055f * A[t%2][i][j-1] + 0.1111f * A[t%2][i][j] + 0.1167f * A[t%2][i][j+1]
            + 0.1223f * A[t%2][i+1][j-1] + 0.1279f * A[t%2][i+1][j] + 0.1335f * A[t%2][i+1][j+1];
  }
  return sb_elapsed(start_time);
}
