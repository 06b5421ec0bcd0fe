#define BENCH_DIM 2
#define BENCH_FPP 25
#define BENCH_RAD 3

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
            0.06156f * A[t%2][i-3][j] + 0.06412f * A[t%2][i-2][j] + 0.06668f * A[t%2][i-1][j]
            + 0.06924f * A[t%2][i][j-3] + 0.0718f * A[t%2][i][j-2] + 0.07436f * A[t%2][i][j-1]
            + 0.07692f * A[t%2][i][j] + 0.07948f * A[t%2][i][j+1] + 0.08204f * A[t%2][i][j+2]
            + 0.0846f * A[t%2][i][j+3] + 0.08716f * A[t%2][i+1][j] + 0.08972f * A[t%2][i+2][j]
            + 0.09228f * A[t%2][i+3][j];
#pragma endscop
  }
  else {
    for (int t = 0; t < timestep; t++)
#pragma omp parallel for
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          A[(t+1)%2][i][j] =
            0.06156f * A[t%2][i-3][j] + 0.06412f * A[t%2][i-2][j] + 0.06668f * A[t%2][i-1][j]
            + 0.06924f * A[t%2][i][j-3] + 0.0718f * A[t%2][i][j-2] + 0.07436f * A[t%2][i][j-1]
            + 0.07692f * A[t%2][i][j] + 0.07948f * A[t%2][i][j+1] + 0.08204f * A[t%2][i][j+2]
            + 0.0846f * A[t%2][i][j+3] + 0.08716f * A[t%2][i+1][j] + 0.08972f * A[t%2][i+2][j]
            + 0.09228f * A[t%2][i+3][j];
  }
  return sb_elapsed(start_time);
}
