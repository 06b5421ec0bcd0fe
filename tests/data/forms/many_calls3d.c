/* expect: {"ndim": 3, "radius": [1, 1, 1], "shape": "star", "diagonal_free": true, "flops_per_cell": 68, "dtype": "double", "params": ["T", "n"], "offsets": [[-1, 0, 0], [0, -1, 0], [0, 0, -1], [0, 0, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0]]} */
/* Form: an update of sixteen calls of inexact <math.h> functions (the transcendental
   ones), which the kernels call out of line (an5dpy.cuda.macros.OUTLINED_CALLS_FROM):
   each such function is one __noinline__ function of the kernel file instead of a
   sequence inlined at every level op; the results stay the inlined calls', bit for bit.
   Arguments stay in each function's domain for any grid values (fabs, 1 + fabs). */
#include <math.h>

void many_calls(int n, int T, double A[2][n][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        for (int k = 1; k < n - 1; k++)
          A[(t+1)%2][i][j][k] = 0.25 * A[t%2][i][j][k]
            + 0.01 * pow(fabs(A[t%2][i-1][j][k]), 0.75) + 0.01 * exp(-fabs(A[t%2][i+1][j][k]))
            + 0.01 * sin(A[t%2][i][j-1][k]) + 0.01 * cos(A[t%2][i][j+1][k])
            + 0.01 * atan(A[t%2][i][j][k-1]) + 0.01 * log(1.0 + fabs(A[t%2][i][j][k+1]))
            + 0.01 * expm1(-fabs(A[t%2][i][j][k])) + 0.01 * cbrt(A[t%2][i-1][j][k])
            + 0.01 * tanh(A[t%2][i+1][j][k]) + 0.01 * erf(A[t%2][i][j-1][k])
            + 0.01 * log1p(fabs(A[t%2][i][j+1][k])) + 0.01 * exp2(-fabs(A[t%2][i][j][k-1]))
            + 0.01 * hypot(A[t%2][i][j][k+1], A[t%2][i][j][k])
            + 0.01 * atan2(A[t%2][i-1][j][k], 1.0 + fabs(A[t%2][i+1][j][k]))
            + 0.01 * sinh(0.1 * A[t%2][i][j-1][k]) + 0.01 * log2(2.0 + fabs(A[t%2][i][j+1][k]))
            + 0.05 * (A[t%2][i-1][j][k] + A[t%2][i+1][j][k] + A[t%2][i][j-1][k]
                      + A[t%2][i][j+1][k] + A[t%2][i][j][k-1] + A[t%2][i][j][k+1]);
#pragma endscop
}
