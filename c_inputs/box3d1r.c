#define BENCH_DIM 3
#define BENCH_FPP 53
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
              0.02963f * A[t%2][i-1][j-1][k-1] + 0.0302f * A[t%2][i-1][j-1][k] + 0.03077f * A[t%2][i-1][j-1][k+1]
              + 0.03134f * A[t%2][i-1][j][k-1] + 0.03191f * A[t%2][i-1][j][k] + 0.03248f * A[t%2][i-1][j][k+1]
              + 0.03305f * A[t%2][i-1][j+1][k-1] + 0.03362f * A[t%2][i-1][j+1][k] + 0.03419f * A[t%2][i-1][j+1][k+1]
              + 0.03476f * A[t%2][i][j-1][k-1] + 0.03533f * A[t%2][i][j-1][k] + 0.0359f * A[t%2][i][j-1][k+1]
              + 0.03647f * A[t%2][i][j][k-1] + 0.03704f * A[t%2][i][j][k] + 0.03761f * A[t%2][i][j][k+1]
              + 0.03818f * A[t%2][i][j+1][k-1] + 0.03875f * A[t%2][i][j+1][k] + 0.03932f * A[t%2][i][j+1][k+1]
              + 0.03989f * A[t%2][i+1][j-1][k-1] + 0.04046f * A[t%2][i+1][j-1][k] + 0.04103f * A[t%2][i+1][j-1][k+1]
              + 0.0416f * A[t%2][i+1][j][k-1] + 0.04217f * A[t%2][i+1][j][k] + 0.04274f * A[t%2][i+1][j][k+1]
              + 0.04331f * A[t%2][i+1][j+1][k-1] + 0.04388f * A[t%2][i+1][j+1][k] + 0.04445f * A[t%2][i+1][j+1][k+1];
#pragma endscop
  }
  else {
    for (int t = 0; t < timestep; t++)
#pragma omp parallel for
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          for (int k = BENCH_RAD; k < dimsize - BENCH_RAD; k++)
            A[(t+1)%2][i][j][k] =
              0.02963f * A[t%2][i-1][j-1][k-1] + 0.0302f * A[t%2][i-1][j-1][k] + 0.03077f * A[t%2][i-1][j-1][k+1]
              + 0.03134f * A[t%2][i-1][j][k-1] + 0.03191f * A[t%2][i-1][j][k] + 0.03248f * A[t%2][i-1][j][k+1]
              + 0.03305f * A[t%2][i-1][j+1][k-1] + 0.03362f * A[t%2][i-1][j+1][k] + 0.03419f * A[t%2][i-1][j+1][k+1]
              + 0.03476f * A[t%2][i][j-1][k-1] + 0.03533f * A[t%2][i][j-1][k] + 0.0359f * A[t%2][i][j-1][k+1]
              + 0.03647f * A[t%2][i][j][k-1] + 0.03704f * A[t%2][i][j][k] + 0.03761f * A[t%2][i][j][k+1]
              + 0.03818f * A[t%2][i][j+1][k-1] + 0.03875f * A[t%2][i][j+1][k] + 0.03932f * A[t%2][i][j+1][k+1]
              + 0.03989f * A[t%2][i+1][j-1][k-1] + 0.04046f * A[t%2][i+1][j-1][k] + 0.04103f * A[t%2][i+1][j-1][k+1]
              + 0.0416f * A[t%2][i+1][j][k-1] + 0.04217f * A[t%2][i+1][j][k] + 0.04274f * A[t%2][i+1][j][k+1]
              + 0.04331f * A[t%2][i+1][j+1][k-1] + 0.04388f * A[t%2][i+1][j+1][k] + 0.04445f * A[t%2][i+1][j+1][k+1];
  }
  return sb_elapsed(start_time);
}
