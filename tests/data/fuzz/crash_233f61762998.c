/* expect: {"error": "may be negative", "error_line": 10} */
/* Rejected: (t-1)%2 is -1 when t = 0 (C's % keeps the sign): A[-1] is outside A. */

}
  for (int t = 0; t < T; t++)	
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n -1; j++)
        A[t%2][i][j] = 0.5f * (A[(t-1)%2][i-1][j] + A[(t-1)%2][i+1][j]);
#pragma endscop
#pragma scop
