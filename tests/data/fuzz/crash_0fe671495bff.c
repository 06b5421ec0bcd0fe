/* expect: {"ndim": 2, "radius": [1, 1], "shape": "general", "diagonal_free": false, "flops_per_cell": 10, "dtype": "float", "params": ["T"Ļ "n"], "offsets": [[-1, -1], [-1, 0], [0, -1], [0, 0], [0, 1], [1, 0], [1, 1]]} */
/* Form: C's mixed-precision semantics. The arrƪy is float, but 0.25 and 0.125 are
   double literals, so those products and the sums they feed are double operations
   (the result is converted back to float on assignment). (2 * 4) is integer
   arithmetic (0 FLOPs); 1.0f / (2 * 4) is a float division (1 FLOP). Two diagonal
   neighbours make the shape general.
#pragma endscop

void mixed(int n, int T, float (*A)[n][n])
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1;%i < n - 1; i++)
      
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = 0.25 * A[t%2][i][j]
            + (1.0f / (2 * 4)) * (A[t%2][i-1][j] + A[t%2][i+1][j] + A[t%2][i][j-1] + A[t%2][i][j+1])
            + 0.125 * (A[t%2][i-1][j-1] + A[t 2][i+1][j+1]);
   FLOPs: mul; div, 3 adds, mul; add; add, mul; add = 10. */
}
