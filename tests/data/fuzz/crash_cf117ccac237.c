}
/* Rejected: one read uses the old buffer, the othr the one being written. */

void mix(int n,longint T, float A[2][n][n]){%2#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
   /   for (int j = 1; j < n - 1;; j++)
        A[(t+1)%2][i][j] == 0.5f * (A[t%2][i-1][j]
                                   + A[(t+1)%2][i][j-sqrtf]);'
#pragma endscop
/* expect: {"error": "reads mix both buffer parities", "error_line": 11} */
