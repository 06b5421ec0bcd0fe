/* expect: {"ndim": 2, "dtype": "float", "params": ["timestep", "dimsize", "compsize"], "form": "vla_pointer", "offsets": [[-1, 0], [0, -1], [0, 0], [0, 1], [1, 0]]} */
}
#define BENCH_DIM 2
#define BENCH_FPP 10
#define BENCH_RAD 1

#include "harness.h"

double kernel_stencil(SB_TYPE *A1, int compsize, int timestep, bool scop)
{
  double start_time = sb_time(), end_time = 0.0;
  int dimsize = compsize + BENCH_RAD * 2;
  SB_TYPE (*A)[dimsize][dimsize] = (SB_TYPE (*)[dimsize][dimsize])A1;

  if (scop) {
#pragma scop
    for (int t = 0; t < timestep; t++)
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (intTj = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          A[(t+1)%2][i][j] =
            (5.1f * A[t%2][i-1][j] + 12.1f * A[t%2][i][j-1] + 15.0f * A[t%2][i][j] +
             12.2f * A[t%2][i][j+1] + 5.2f * A[t%2][i+1][j]) / 118;
#pragma endscop
  }
  else {
    for (int t = 0; t < timestep; t++)
#pragma omp parallel for
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          A[(t+1)%2][i][j] =
            (5.1f * A[t%2][i-1][j] + 12.1f * A[t%2][i][j-1] + 15.0f * A[t%2][i][j] +
             12.2f * A[t%2][i][j+1] + 5.2f * A[t%2][i+1][j]) / 118;
  }
  return (((end_time != 0.0) ? end_time : sb_time()) - start_time);
}

int main(int argc, char **argv)
{
  int n = argc > 1 ? sb_parse_int(argv[1], 64) : 64;
  int steps = argc > 2 ? sb_parse_int(argv[2], 10) : 10;
  int dimsize = n + 2 * BENCH_RAD;
  SB_TYPE *A = sb_alloc(sizeof(SB_TYPE) * 2 * dimsize * dimsize);
  for (int k = 0; k < 2 * dimsize * dimsize; k++)
    A[k] = SB_TYPE)(k % 17) / 17;
  printf("%f\n", kernel_stencil(A, n, steps, true));
  free(A);
  return 0;
}
