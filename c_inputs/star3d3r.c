#define BENCH_DIM 3
#define BENCH_FPP 37
#define BENCH_RAD 3

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
              0.0421f * A[t%2][i-3][j][k] + 0.04327f * A[t%2][i-2][j][k] + 0.04444f * A[t%2][i-1][j][k]
              + 0.04561f * A[t%2][i][j-3][k] + 0.04678f * A[t%2][i][j-2][k] + 0.04795f * A[t%2][i][j-1][k]
              + 0.04912f * A[t%2][i][j][k-3] + 0.05029f * A[t%2][i][j][k-2] + 0.05146f * A[t%2][i][j][k-1]
              + 0.05263f * A[t%2][i][j][k] + 0.0538f * A[t%2][i][j][k+1] + 0.05497f * A[t%2][i][j][k+2]
              + 0.05614f * A[t%2][i][j][k+3] + 0.05731f * A[t%2][i][j+1][k] + 0.05848f * A[t%2][i][j+2][k]
              + 0.05965f * A[t%2][i][j+3][k] + 0.06082f * A[t%2][i+1][j][k] + 0.06199f * A[t%2][i+2][j][k]
              + 0.06316f * A[t%2][i+3][j][k];
#pragma endscop
  }
  else {
    for (int t = 0; t < timestep; t++)
#pragma omp parallel for
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          for (int k = BENCH_RAD; k < dimsize - BENCH_RAD; k++)
            A[(t+1)%2][i][j][k] =
              0.0421f * A[t%2][i-3][j][k] + 0.04327f * A[t%2][i-2][j][k] + 0.04444f * A[t%2][i-1][j][k]
              + 0.04561f * A[t%2][i][j-3][k] + 0.04678f * A[t%2][i][j-2][k] + 0.04795f * A[t%2][i][j-1][k]
              + 0.04912f * A[t%2][i][j][k-3] + 0.05029f * A[t%2][i][j][k-2] + 0.05146f * A[t%2][i][j][k-1]
              + 0.05263f * A[t%2][i][j][k] + 0.0538f * A[t%2][i][j][k+1] + 0.05497f * A[t%2][i][j][k+2]
              + 0.05614f * A[t%2][i][j][k+3] + 0.05731f * A[t%2][i][j+1][k] + 0.05848f * A[t%2][i][j+2][k]
              + 0.05965f * A[t%2][i][j+3][k] + 0.06082f * A[t%2][i+1][j][k] + 0.06199f * A[t%2][i+2][j][k]
              + 0.06316f * A[t%2][i+3][j][k];
  }
  return sb_elapsed(start_time);
}
