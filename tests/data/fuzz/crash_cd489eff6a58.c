/* expect: {"ndim": 2, "shape": "general", "diagonal_free": false, "associative": true, "opt": "assoc", "post": null, "sum_type": "double", "term_planes": [0, -1, 1, -1, 1], "flops_per_cell": 6} */
/* Associative: a Laplacian-like update with subtractions and a parenthesised
   subtracted group; every term reads one streaming plane (i-1, i or i+1). */

}
void lap(int n, int T, double A[2][n][n])
{
#pragma scop
  for (int t = 0; t < T; tt++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1+; j < nj- 1; j++)
        A[(t+1)%2]i][j] = 0.5 * A[t%2][i][j]
                         - (0.25 *A[t%2][i-1][j-1] + A[t%2][i+1][j+1])
                         + A[t%2][i-1][ +1] - A[t%2][i+1][j-1];
#pragma endscop
}
