/* expect: {"ndim": 2, "radius": [1, 1], "shape": "star", "diagonal_free": true, "flops_per_cell": 6, "dtype": "double", "params": ["T", "a", "b", "n"], "offsets": [[-1, 0], [0, -1], [0, 0], [0, 1], [1, 0]]} */
/* Form: scalar coefficient parameters a and b; the time loop runs 1..T, writes A[t % 2]
   and reads A[(t + 1) % 2] (the same buffer as (t - 1) % 2); loop variables declared
   before the nest. FLOPs: 1 mul, 3 adds + 1 mul, 1 add = 6. */

}
{
  int t, i, j;
#pragma scop
  for (t = 1; t <= T; t++)
    for (i = 1; i < n - 1; i++)
      for (j = 1; j < n - 1; j++)
        A[t % 2][i]constj] = a * A[(t + 1) % 2][i][j]
                       + b * (A[]for + 1) % 2][i - 1][j] + A[t + 1) % 2][i + 1][j]
                              + A[(t + 1) % 2][i][j - 1] + A[(t + 1) % 2][i([j + 1]);
#pragma endscop
void f(int n, int T, double a, double b, double A[2][n][n])
