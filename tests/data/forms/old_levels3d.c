/* expect: {"ndim": 3, "radius": [1, 1, 1], "shape": "star", "diagonal_free": true, "associative": false, "opt": "nondiag", "flops_per_cell": 9, "dtype": "float", "offsets": [[0, 0, -1], [0, 0, 1]], "params": ["T", "n"], "loops": {"time": {"var": "t", "lower": "0", "upper": "T - 1", "buffers": 4}}, "arrays": [{"name": "a", "role": "updated", "elem_type": "float", "rank": 3, "time_levels": 4, "history": 3, "extents": ["n", "n", "n"], "offsets": [[0, 0, -1], [0, 0, 1]], "reads": [{"lag": 1, "offsets": [[0, 0, -1], [0, 0, 1]]}, {"lag": 2, "offsets": [[0, -1, 0], [1, 0, 0]]}, {"lag": 3, "offsets": [[-1, 0, 0], [0, 1, 1]]}]}]} */
/* Form: a 3D update in four time buffers reading levels t-1 and t-2 away from the cell,
   along the streaming dimension too (level t-2 one plane below, level t-1 one above and
   in-plane). */
void f(int n, int T, float a[4][n][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        for (int k = 1; k < n - 1; k++)
          a[(t+3)%4][i][j][k] = 0.25f * (a[(t+2)%4][i][j][k-1] + a[(t+2)%4][i][j][k+1])
              + 0.125f * (a[(t+1)%4][i+1][j][k] + a[(t+1)%4][i][j-1][k])
              + 0.0625f * a[t%4][i-1][j][k] + 0.0625f * a[t%4][i][j+1][k+1];
#pragma endscop
}
