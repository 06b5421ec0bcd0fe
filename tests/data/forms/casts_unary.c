/* expect: {"ndim": 2, "radius": [1, 1], "shape": "star", "diagonal_free": true, "flops_per_cell": 11, "dtype": "double", "params": ["T", "n"], "offsets": [[-1, 0], [0, -1], [0, 0], [0, 1], [1, 0]]} */
/* Form: casts, redundant parentheses, unary minus and plus (0 FLOPs each), fabs on
   double, a C99 bool local in the function, declarations inside the for-init.
   FLOPs: mul; sub, mul; add, mul; sub, fabs, mul; 3 adds = 11. */
#include <math.h>
#include <stdbool.h>

bool relax(int n, int T, double A[2][n][n])
{
  bool ok = n > 2 && T >= 0;
  if (!ok)
    return false;
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = -(-0.5 * (A[t%2][i][j]))
                         + ((double)0.125f) * (A[t%2][i][j+1] - (-A[t%2][i][j-1]))
                         + (0.125) * ((A[t%2][i-1][j]) + (+A[t%2][i+1][j]))
                         + 0.01 * fabs(A[t%2][i-1][j] - A[t%2][i+1][j]);
#pragma endscop
  return ok;
}
