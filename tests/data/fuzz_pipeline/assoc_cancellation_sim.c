/* fuzz: {"name": "star2d4r.c", "bt": 1, "bs": null, "sl": null, "opt": "assoc", "defines": [["SB_TYPE", "double"]], "include_dirs": ["c_inputs"], "smem_wrap": false, "baseline": false, "sim_seed": 879076, "note": "fuzz find: assoc sum with a cancelling term (- A[t%2][i+1][j+4]); an5d verify --backend sim reported FAIL (exit 1): the per-cell relative error of near-zero cells exceeded the tolerance; fixed in verify.compare"} */
#define BENCH_DIM 2
#define BENCH_FPP 33
#define BENCH_RAD 4

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
            0.04706f * A[t%2][i-4][j] + 0.04853f * A[t%2][i-3][j] + 0.05f * A[t%2][i-2][j]
            + 0.05147f * A[t%2][i-1][j] + 0.05294f * A[t%2][i][j-4] + 0.05441f * A[t%2][i][j-3]
            + 0.05588f * A[t%2][i][j-2] + 0.05882f * A[t%2][i][j]
            + 0.06029f * A[t%2][i][j+1] + 0.06176f * A[t%2][i][j+2] + 0.06323f * A[t%2][i][j+3]
            + 0.0647f * A[t%2][i][j+4] + 0.06617f * A[t%2][i+1][j] + 0.06764f * A[t%2][i+2][j]
            + 0.06911f * A[t%2][i+3][j] + 0.07058f * A[t%2][i+4][j] - A[t % 2][i+1][j+4];
#pragma endscop
  }
  else {
    for (int t = 0; t < timestep; t++)
#pragma omp parallel for
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          A[(t+1)%2][i][j] =
            0.04706f * A[t%2][i-4][j] + 0.04853f * A[t%2][i-3][j] + 0.05f * A[t%2][i-2][j]
            + 0.05147f * A[t%2][i-1][j] + 0.05294f * A[t%2][i][j-4] + 0.05441f * A[t%2][i][j-3]
            + 0.05588f * A[t%2][i][j-2] + 0.05735f * A[t%2][i][j-1] + 0.05882f * A[t%2][i][j]
            + 0.06029f * A[t%2][i][j+1] + 0.06176f * A[t%2][i][j+2] + 0.06323f * A[t%2][i][j+3]
            + 0.0647f * A[t%2][i][j+4] + 0.06617f * A[t%2][i+1][j] + 0.06764f * A[t%2][i+2][j]
            + 0.06911f * A[t%2][i+3][j] + 0.07058f * A[t%2][i+4][j];
  }
  return sb_elapsed(start_time);
}
