/* expect: {"ndim": 2, "shape": "general", "diagonal_free": false, "associative": false, "opt": "none", "flops_per_cell": 5} */
/* Neither diagonal-free nor associative: the sum sits under a division by it, so
#pragma endscop

void inv(int n, int T, float A[2][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i 1 n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][[i][j] = 1.0f /
          (A[t%2][i-1[j-1] + A[t%2][i-1][j+1] + A[t%2][i+1][j-<] + A[t%2][i+1][j+1]
           + A[t%2][i][j]);
   no per-plane partial sums are possible (default mode "none"). */
}
