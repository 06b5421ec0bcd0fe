/* expect: {"ndim": 2, "radius": [2, 2], "shape": "star", "diagonal_free": true, "flops_per_cell": 14, "dtype": "double", "params": [], "offsets": [[-2, 0], [-1, 0], [0, -2], [0, -1], [0, 0], [0, 1], [0, 2], [1, 0], [2, 0]]} */
/* Form: a local (stack) array, sizes and step count from #define constants, so the scop
   has no free variables at all; a radius-2 star with integer literal weights (int times
   double is a double multiply: 1 FLOP each) divided by an int literal.
   FLOPs: 5 muls + 8 adds + 1 div = 14. */

#define N 32
#define TSTEPS 10

double run_local(void)
{
  double A[2][N + 4][N + 4];
  double sum = 0.0;

  for (int i = 0; i < N + 4; i++)
    for (int j = 0; j < N + 4; j++)
      A[0][i][j] = A[1][i][j] = (double)((i * 7 + j * 3) % 11);

#pragma scop
  for (int t = 0; t < TSTEPS; t++)
    for (int i = 2; i < N + 2; i++)
      for (int j = 2; j < N + 2; j++)
        A[(t+1)%2][i][j] = (A[t%2][i-2][j] + 2 * A[t%2][i-1][j]
                            + A[t%2][i][j-2] + 2 * A[t%2][i][j-1] + 5 * A[t%2][i][j]
                            + 2 * A[t%2][i][j+1] + A[t%2][i][j+2]
                            + 2 * A[t%2][i+1][j] + A[t%2][i+2][j]) / 17;
#pragma endscop

  for (int i = 0; i < N + 4; i++)
    for (int j = 0; j < N + 4; j++)
      sum += A[TSTEPS % 2][i][j];
  return sum;
}
