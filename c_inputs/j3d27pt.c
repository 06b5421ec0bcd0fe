#define BENCH_DIM 3
#define BENCH_FPP 54
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
              (1.04f * A[t%2][i-1][j-1][k-1] + 1.06f * A[t%2][i-1][j-1][k] + 1.08f * A[t%2][i-1][j-1][k+1]
               + 1.1f * A[t%2][i-1][j][k-1] + 1.12f * A[t%2][i-1][j][k] + 1.14f * A[t%2][i-1][j][k+1]
               + 1.16f * A[t%2][i-1][j+1][k-1] + 1.18f * A[t%2][i-1][j+1][k] + 1.2f * A[t%2][i-1][j+1][k+1]
               + 1.22f * A[t%2][i][j-1][k-1] + 1.24f * A[t%2][i][j-1][k] + 1.26f * A[t%2][i][j-1][k+1]
               + 1.28f * A[t%2][i][j][k-1] + 1.3f * A[t%2][i][j][k] + 1.32f * A[t%2][i][j][k+1]
               + 1.34f * A[t%2][i][j+1][k-1] + 1.36f * A[t%2][i][j+1][k] + 1.38f * A[t%2][i][j+1][k+1]
               + 1.4f * A[t%2][i+1][j-1][k-1] + 1.42f * A[t%2][i+1][j-1][k] + 1.44f * A[t%2][i+1][j-1][k+1]
               + 1.46f * A[t%2][i+1][j][k-1] + 1.48f * A[t%2][i+1][j][k] + 1.5f * A[t%2][i+1][j][k+1]
               + 1.52f * A[t%2][i+1][j+1][k-1] + 1.54f * A[t%2][i+1][j+1][k] + 1.56f * A[t%2][i+1][j+1][k+1]) / 35.1f;
#pragma endscop
  }
  else {
    for (int t = 0; t < timestep; t++)
#pragma omp parallel for
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          for (int k = BENCH_RAD; k < dimsize - BENCH_RAD; k++)
            A[(t+1)%2][i][j][k] =
              (1.04f * A[t%2][i-1][j-1][k-1] + 1.06f * A[t%2][i-1][j-1][k] + 1.08f * A[t%2][i-1][j-1][k+1]
               + 1.1f * A[t%2][i-1][j][k-1] + 1.12f * A[t%2][i-1][j][k] + 1.14f * A[t%2][i-1][j][k+1]
               + 1.16f * A[t%2][i-1][j+1][k-1] + 1.18f * A[t%2][i-1][j+1][k] + 1.2f * A[t%2][i-1][j+1][k+1]
               + 1.22f * A[t%2][i][j-1][k-1] + 1.24f * A[t%2][i][j-1][k] + 1.26f * A[t%2][i][j-1][k+1]
               + 1.28f * A[t%2][i][j][k-1] + 1.3f * A[t%2][i][j][k] + 1.32f * A[t%2][i][j][k+1]
               + 1.34f * A[t%2][i][j+1][k-1] + 1.36f * A[t%2][i][j+1][k] + 1.38f * A[t%2][i][j+1][k+1]
               + 1.4f * A[t%2][i+1][j-1][k-1] + 1.42f * A[t%2][i+1][j-1][k] + 1.44f * A[t%2][i+1][j-1][k+1]
               + 1.46f * A[t%2][i+1][j][k-1] + 1.48f * A[t%2][i+1][j][k] + 1.5f * A[t%2][i+1][j][k+1]
               + 1.52f * A[t%2][i+1][j+1][k-1] + 1.54f * A[t%2][i+1][j+1][k] + 1.56f * A[t%2][i+1][j+1][k+1]) / 35.1f;
  }
  return sb_elapsed(start_time);
}
