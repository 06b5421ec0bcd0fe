/* expect: {"error": "in-place update: A[(t+1)%2][i][j-1] reads the buffer it writes", "error_line": 12} */
/* Rejected: one read uses the old buffer, the other the one being written, at a neighbour
   (which the loop may already have updated; at the cell itself it would be a leapfrog). */

void mix(int n, int T, float A[2][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = 0.5f * (A[t%2][i-1][j]
                                   + A[(t+1)%2][i][j-1]);
#pragma endscop
}
