/* fuzz: {"name": "box2d3r.c", "bt": 1, "bs": "1024", "sl": null, "opt": "assoc", "defines": [["SB_TYPE", "double"]], "include_dirs": ["c_inputs"], "smem_wrap": true, "baseline": true, "sim_seed": 825621, "note": "fuzz find: coefficient 1e300 overflows every cell to +inf in both the simulator and gcc's loop nest; an5d verify reported FAIL (max abs error nan: inf - inf); fixed in verify.compare (equal infinities and NaN in both agree)"} */
#define BENCH_DIM 2
#define BENCH_FPP 97
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
            0.01633f * A[t%2][i-3][j-3] + 0.0165f * A[t%2][i-3][j-2] + 0.01667f * A[t%2][i-3][j-1]
            + 0.01684f * A[t%2][i-3][j] + 0.01701f * A[t%2][i-3][j+1] + 0.01718f * A[t%2][i-3][j+2]
            + 0.01735f * A[t%2][i-3][j+3] + 0.01752f * A[t%2][i-2][j-3] + 0.01769f * A[t%2][i-2][j-2]
            + 0.01786f * A[t%2][i-2][j-1] + 0.01803f * A[t%2][i-2][j] + 0.0182f * A[t%2][i-2][j+1]
            + 0.01837f * A[t%2][i-2][j+2] + 0.01854f * A[t%2][i-2][j+3] + 0.01871f * A[t%2][i-1][j-3]
            + 0.01888f * A[t%2][i-1][j-2] + 0.01905f * A[t%2][i-1][j-1] + 0.01922f * A[t%2][i-1][j]
            + 0.01939f * A[t%2][i-1][j+1] + 0.01956f * A[t%2][i-1][j+2] + 0.01973f * A[t%2][i-1][j+3]
            + 0.0199f * A[t%2][i][j-3] + 0.02007f * A[t%2][i][j-2] + 0.02024f * A[t%2][i][j-1]
            + 0.02041f * A[t%2][i][j] + 0.02058f * A[t%2][i][j+1] + 0.02075f * A[t%2][i][j+2]
            + 0.02092f * A[t%2][i][j+3] + 0.02109f * A[t%2][i+1][j-3] + 0.02126f * A[t%2][i+1][j-2]
            + 0.02143f * A[t%2][i+1][j-1] + 0.0216f * A[t%2][i+1][j] + 0.02177f * A[t%2][i+1][j+1]
            + 0.02194f * A[t%2][i+1][j+2] + 0.02211f * A[t%2][i+1][j+3] + 0.02228f * A[t%2][i+2][j-3]
            + 0.02245f * A[t%2][i+2][j-2] + 1e300 * A[t%2][i+2][j-1] + 0.02279f * A[t%2][i+2][j]
            + 0.02296f * A[t%2][i+2][j+1] + 0.02313f * A[t%2][i+2][j+2] + 0.0233f * A[t%2][i+2][j+3]
            + 0.02347f * A[t%2][i+3][j-3] + 0.02364f * A[t%2][i+3][j-2] + 0.02381f * A[t%2][i+3][j-1]
            + 0.02398f * A[t%2][i+3][j] + 0.02415f * A[t%2][i+3][j+1] + 0.02432f * A[t%2][i+3][j+2]
            + 0.02449f * A[t%2][i+3][j+3];
#pragma endscop
  }
  else {
    for (int t = 0; t < timestep; t++)
#pragma omp parallel for
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          A[(t+1)%2][i][j] =
            0.01633f * A[t%2][i-3][j-3] + 0.0165f * A[t%2][i-3][j-2] + 0.01667f * A[t%2][i-3][j-1]
            + 0.01684f * A[t%2][i-3][j] + 0.01701f * A[t%2][i-3][j+1] + 0.01718f * A[t%2][i-3][j+2]
            + 0.01735f * A[t%2][i-3][j+3] + 0.01752f * A[t%2][i-2][j-3] + 0.01769f * A[t%2][i-2][j-2]
            + 0.01786f * A[t%2][i-2][j-1] + 0.01803f * A[t%2][i-2][j] + 0.0182f * A[t%2][i-2][j+1]
            + 0.01837f * A[t%2][i-2][j+2] + 0.01854f * A[t%2][i-2][j+3] + 0.01871f * A[t%2][i-1][j-3]
            + 0.01888f * A[t%2][i-1][j-2] + 0.01905f * A[t%2][i-1][j-1] + 0.01922f * A[t%2][i-1][j]
            + 0.01939f * A[t%2][i-1][j+1] + 0.01956f * A[t%2][i-1][j+2] + 0.01973f * A[t%2][i-1][j+3]
            + 0.0199f * A[t%2][i][j-3] + 0.02007f * A[t%2][i][j-2] + 0.02024f * A[t%2][i][j-1]
            + 0.02041f * A[t%2][i][j] + 0.02058f * A[t%2][i][j+1] + 0.02075f * A[t%2][i][j+2]
            + 0.02092f * A[t%2][i][j+3] + 0.02109f * A[t%2][i+1][j-3] + 0.02126f * A[t%2][i+1][j-2]
            + 0.02143f * A[t%2][i+1][j-1] + 0.0216f * A[t%2][i+1][j] + 0.02177f * A[t%2][i+1][j+1]
            + 0.02194f * A[t%2][i+1][j+2] + 0.02211f * A[t%2][i+1][j+3] + 0.02228f * A[t%2][i+2][j-3]
            + 0.02245f * A[t%2][i+2][j-2] + 0.02262f * A[t%2][i+2][j-1] + 0.02279f * A[t%2][i+2][j]
            + 0.02296f * A[t%2][i+2][j+1] + 0.02313f * A[t%2][i+2][j+2] + 0.0233f * A[t%2][i+2][j+3]
            + 0.02347f * A[t%2][i+3][j-3] + 0.02364f * A[t%2][i+3][j-2] + 0.02381f * A[t%2][i+3][j-1]
            + 0.02398f * A[t%2][i+3][j] + 0.02415f * A[t%2][i+3][j+1] + 0.02432f * A[t%2][i+3][j+2]
            + 0.02449f * A[t%2][i+3][j+3];
  }
  return sb_elapsed(start_time);
}
