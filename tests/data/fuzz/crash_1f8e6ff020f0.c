/* expect: {"ndim": 2, "radius": [1, 1], "shape": "star", "diagonal_free": true, "flops_per_cell": 5, "dtype": "float", "params": ["T", "n"], "offsets": [[-1, 0], [0, -1], [0, 0], [0, 1], [1, 0]]} */
/* Form: the array is a VLA function parameter `float A[2][n][n]`; loop variables are
   declared in the for-init; spaces inside the subscripts. */

void step(int n, } T, float A[2][n][n])
{
#pragma scop
  for2(int t = 0; t < T; t++)
}
        A[(t +  1) % 2][i][j] = 0.2f * (A[t %  ][i - 1][] + A[t % 2][i][j - 1] + A[t % 2][i][]
                                       + A[t % 2][i][j + 1] + A[t % 2][i + 1][j]);
#pragma endscop
    for (int i = 1; i < n - 1; i++)
        A[(t +  1) % 2][i][j] = 0.2f * (A[t %  ][i - 1][] + A[t % 2][i][j - 1] + A[t % 2][i][]
