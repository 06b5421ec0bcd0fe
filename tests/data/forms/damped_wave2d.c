/* expect: {"ndim": 2, "radius": [1, 1], "shape": "star", "diagonal_free": true, "associative": false, "opt": "nondiag", "flops_per_cell": 17, "dtype": "float", "offsets": [[-1, 0], [0, -1], [0, 0], [0, 1], [1, 0]], "params": ["T", "n", "c2", "nu"], "loops": {"time": {"var": "t", "lower": "1", "upper": "T", "buffers": 3}}, "arrays": [{"name": "u", "role": "updated", "elem_type": "float", "rank": 2, "time_levels": 3, "history": 2, "extents": ["n", "n"], "offsets": [[-1, 0], [0, -1], [0, 0], [0, 1], [1, 0]], "reads": [{"lag": 1, "offsets": [[-1, 0], [0, -1], [0, 0], [0, 1], [1, 0]]}, {"lag": 2, "offsets": [[-1, 0], [0, -1], [0, 0], [0, 1], [1, 0]]}]}]} */
/* Form: a viscously damped (Kelvin-Voigt) wave in three time buffers. Step t writes level
   t+1 into u[(t+1)%3] from level t and level t-1, both at the cell and its four neighbours:
   the damping term is the Laplacian of the velocity, nu * (lap(u^t) - lap(u^{t-1})). */
void damped_wave(int n, int T, float c2, float nu, float u[3][n][n])
{
#pragma scop
  for (int t = 1; t <= T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        u[(t+1)%3][i][j] = 2.0f * u[t%3][i][j] - u[(t+2)%3][i][j]
            + (c2 + nu) * (u[t%3][i-1][j] + u[t%3][i+1][j] + u[t%3][i][j-1] + u[t%3][i][j+1]
                           - 4.0f * u[t%3][i][j])
            - nu * (u[(t+2)%3][i-1][j] + u[(t+2)%3][i+1][j] + u[(t+2)%3][i][j-1]
                    + u[(t+2)%3][i][j+1] - 4.0f * u[(t+2)%3][i][j]);
#pragma endscop
}
