#define BENCH_DIM 3
#define BENCH_FPP 13
#define BENCH_RAD 1

#include "common.h"

double kernel_stencil(SB_TYPE *A1, int compsize, int timestep, bool scop)
{
  double start_time = sb_time();
  int dimsize = compsize + BENCH_RAD * 2;
  SB_TYPE (*A)[dimsize][dimsize][dimsize] = (SB_TYPE (*)[dimsize][dimsize][dimsize])A1;

  if (scop) {
#pragma scop
    for (int t = 0; t < timestep; t++)
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          for (int k = BENCH_RAD; k < dimsize - BENCH_RAD; k++)
            A[(t+1)%2][i][j][k] =
              0.1144f * A[t%2][i-1][j][k] + 0.1239f * A[t%2][i][j-1][k] + 0.1334f * A[t%2][i][j][k-1]
              + 0.1429f * A[t%2][i][j][k] + 0.1524f * A[t%2][i][j][k+1] + 0.1619f * A[t%2][i][j+1][k]
              + 0.1714f * A[t%2][i+1][j][k];
#pragma endscop
  }
  else {
    for (int t = 0; t < timestep; t++)
#pragma omp parallel for
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          for (int k = BENCH_RAD; k < dimsize - BENCH_RAD; k++)
            A[(t+1)%2][i][j][k] =
              0.1144f * A[t%2][i-1][j][k] + 0.1239f * A[t%2][i][j-1][k] + 0.1334f * A[t%2][i][j][k-1]
              + 0.1429f * A[t%2][i][j][k] + 0.1524f * A[t%2][i][j][k+1] + 0.1619f * A[t%2][i][j+1][k]
              + 0.1714f * A[t%2][i+1][j][k];
  }
  return sb_elapsed(start_time);
}
