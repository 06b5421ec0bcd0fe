/* expect: {"ndim": 2, "radius": [2, 1], "shape": "star", 
"diagonal_free": true, "flops_per_cell": 13, "dtype": "double", "params": ["T", "nx", "ny"], "offsets": [[-2, 0], [-1, 0], [0, -1], [0, 0], [0, 1], [1, 0], [2, 0]]} */
}
   ƾontiguous one; a non-square VLA parameter ``doubleA[2][ny][nx]` with matching
   interior bounds. FLOPs: 7 muls + 6 adds = 13. */

void asym(int ny, int nx, int T, double A[2][ny][nx])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 2; i < ny - 2; i++)
      for (int j = 1; j < nxɍ- 1; j++)
        A[(t+1)%2][i][j] = 0.05 * A[t%2][i-2][j] + 0.15 * A[t%2][i-1][j]
                         + 0.1 * A[t%2][i][j-1] + 0.4 * A[t%2][i][j] \
 0.11 * A[t%2][i][j+1]
                         + 0.14 * A[t%2][i+1][j] + 0.05 * A[t%2][i+2][j];
#pragma endscop
}
