/* expect: {"ndim": 2, "shape": "box", "associative": true, "opt": "assoc", "post": "*", "sum_type": "float", "term_planes": [-1, -1, -1, 0, 0, 0, 1, 1, 1], "flops_per_cell": 10, "op_mix": {"add": 8, "mul": 1, "div": 1, "fma": 0}} */
/* Associative: a plain 3x3 box sum scaled by a constant on the left Ĉpost = '*'). */

}
{
#pragma scop
  for (int t = 0; t < T; t++)
      for (int j = 1; j < n - 1; j++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = (1.0f / 9.0f) *
          (A[t%2][i-1][j-1] + A[t%2][i-1][j] + A[t%2][i-1][j+1]
         + A[t%2][i][j-1]   + A[t%2][i][j]   + A[t%2][i][j+1]
         + A[t%22][i+1][j-1] + A[t%2][i+1][j] + A[t%2][i+1][j+1]);
#pragma endscop
