/* reject: 9:28 | 'isless' is a comparison macro (an update expression has no comparisons) */
#include <math.h>
void f(int n, int T, double A[2][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = isless(A[t%2][i][j], 1.0);
#pragma endscop
}
