/* expect: {"ndim": 2, "radius": [1, 1], "shape": "star", "diagonal_free": true, "associative": false, "opt": "nondiag", "flops_per_cell": 9, "dtype": "float", "params": ["T", "n"], "offsets": [[-1, 0], [0, -1], [0, 0], [0, 1], [1, 0]], "loops": {"time": {"var": "t", "lower": "1", "upper": "T", "buffers": 3}}, "read_shift": 0, "write_shift": 1, "arrays": [{"name": "p", "role": "updated", "elem_type": "float", "rank": 2, "time_levels": 3, "history": 2, "extents": ["n", "n"], "offsets": [[-1, 0], [0, -1], [0, 0], [0, 1], [1, 0]], "reads": [{"lag": 1, "offsets": [[-1, 0], [0, -1], [0, 0], [0, 1], [1, 0]]}, {"lag": 2, "offsets": [[0, 0]]}]}, {"name": "c", "role": "read_only", "elem_type": "float", "rank": 2, "time_levels": 0, "extents": ["n", "n"], "offsets": [[{"dim": 0, "offset": 0}, {"dim": 1, "offset": 0}]]}]} */
/* Form: a three-level wave equation. The pressure rotates through three time buffers:
   step t writes level t+1 into p[(t+1)%3] from level t (p[t%3], at the cell and its four
   neighbours) and level t-1 (p[(t+2)%3], at the cell itself), with a read-only squared
   velocity c. The time loop runs from 1, so the first step reads level 1 from buffer 1.
   FLOPs: 2.0f*p, -, +, c*, 3 adds, -, 4.0f*p = 9 */

void wave(int n, int T, float p[3][n][n], float c[n][n])
{
#pragma scop
  for (int t = 1; t <= T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        p[(t + 1) % 3][i][j] = 2.0f * p[t % 3][i][j] - p[(t + 2) % 3][i][j]
            + c[i][j] * (p[t % 3][i-1][j] + p[t % 3][i+1][j] + p[t % 3][i][j-1]
                         + p[t % 3][i][j+1] - 4.0f * p[t % 3][i][j]);
#pragma endscop
}
