#define BENCH_DIM 3
#define BENCH_FPP 49
#define BENCH_RAD 4

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
              0.03196f * A[t%2][i-4][j][k] + 0.03263f * A[t%2][i-3][j][k] + 0.0333f * A[t%2][i-2][j][k]
              + 0.03397f * A[t%2][i-1][j][k] + 0.03464f * A[t%2][i][j-4][k] + 0.03531f * A[t%2][i][j-3][k]
              + 0.03598f * A[t%2][i][j-2][k] + 0.03665f * A[t%2][i][j-1][k] + 0.03732f * A[t%2][i][j][k-4]
              + 0.03799f * A[t%2][i][j][k-3] + 0.03866f * A[t%2][i][j][k-2] + 0.03933f * A[t%2][i][j][k-1]
              + 0.04f * A[t%2][i][j][k] + 0.04067f * A[t%2][i][j][k+1] + 0.04134f * A[t%2][i][j][k+2]
              + 0.04201f * A[t%2][i][j][k+3] + 0.04268f * A[t%2][i][j][k+4] + 0.04335f * A[t%2][i][j+1][k]
              + 0.04402f * A[t%2][i][j+2][k] + 0.04469f * A[t%2][i][j+3][k] + 0.04536f * A[t%2][i][j+4][k]
              + 0.04603f * A[t%2][i+1][j][k] + 0.0467f * A[t%2][i+2][j][k] + 0.04737f * A[t%2][i+3][j][k]
              + 0.04804f * A[t%2][i+4][j][k];
#pragma endscop
  }
  else {
    for (int t = 0; t < timestep; t++)
#pragma omp parallel for
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          for (int k = BENCH_RAD; k < dimsize - BENCH_RAD; k++)
            A[(t+1)%2][i][j][k] =
              0.03196f * A[t%2][i-4][j][k] + 0.03263f * A[t%2][i-3][j][k] + 0.0333f * A[t%2][i-2][j][k]
              + 0.03397f * A[t%2][i-1][j][k] + 0.03464f * A[t%2][i][j-4][k] + 0.03531f * A[t%2][i][j-3][k]
              + 0.03598f * A[t%2][i][j-2][k] + 0.03665f * A[t%2][i][j-1][k] + 0.03732f * A[t%2][i][j][k-4]
              + 0.03799f * A[t%2][i][j][k-3] + 0.03866f * A[t%2][i][j][k-2] + 0.03933f * A[t%2][i][j][k-1]
              + 0.04f * A[t%2][i][j][k] + 0.04067f * A[t%2][i][j][k+1] + 0.04134f * A[t%2][i][j][k+2]
              + 0.04201f * A[t%2][i][j][k+3] + 0.04268f * A[t%2][i][j][k+4] + 0.04335f * A[t%2][i][j+1][k]
              + 0.04402f * A[t%2][i][j+2][k] + 0.04469f * A[t%2][i][j+3][k] + 0.04536f * A[t%2][i][j+4][k]
              + 0.04603f * A[t%2][i+1][j][k] + 0.0467f * A[t%2][i+2][j][k] + 0.04737f * A[t%2][i+3][j][k]
              + 0.04804f * A[t%2][i+4][j][k];
  }
  return sb_elapsed(start_time);
}
