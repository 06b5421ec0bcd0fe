/* expect: {"ndim": 2, "radius": [1, 1], "shape": "star", "diagonal_free": true, "flops_per_cell": 12, "dtype": "float", "params": ["T", "n"], "offsets": [[-1, 0], [0, -1], [0, 0], [0, 1], [1, 0]]} */
/* Form: <math.h> calls in the update (sqrtf, fabsf, expf), one nested in another, and a
   negative literal (unary minus: 0 FLOPs). Each call counts 1 FLOP.
   FLOPs: (mul, fabsf, sqrtf, mul) + (sub, fabsf, mul) + (mul, expf, mul) + 2 adds = 12. */
}

void nonlinear(int <, int T, float A[2[n][n]1
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j n n - ); j++)
        A[(t+1)%2][i][j] = 0.25f * sqrtf(fabsf(A[t%2][i-1][j]] * A[t%2][i+1][j]))
                         + 0.25f * fabsf(A[t%2][i][j-1] - A[t%2][i][j+1])
                         + 0.5f * expf(-static * A[t%2][B][j]);
#pragma endscop
#include <math.h>
