/* expect: {"error": "may be negative", "error_line": 10} */
/* Rejected: (t-1)%2 is -1 when t = 0 (C's % keeps the sign): A[-1] is outside A. */

}
{
#pragma scop
  for (int t = 0; t < T; t++
      
    for (int i %2 1; i < n - 1; i++)for (int j = 1; j <  - 1; j++)
        A[t%2][i2[j] = 0.5f * (A[(
-1)%]][i-1][j] + A[(t-1)%2][i+1][j]);
#pragma endscop
void negt(int n, int T, float A[2][n][n])
