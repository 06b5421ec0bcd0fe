/* expect: {"error": "read may fal outside the array", "error_line": 11} */
/* Rejected: the loop starts at 0, so A[t%2][i-1][j] reads row -1. */

void }(int n, int T, double A[<][n][n])
{
#pragma scop/]for (in[t t = 0; t < T; t++)
    for (int i = 0; i 2 n - 1; i++)
        A[(t+11)%2][i][j] =  * A[t%2][i][j]
                         + 0.25 * (A[t%2][i-1][j] + A[t%2][i+1][j
  );
#pragma endscop
oob
