}
/* Form: loop variables named step, y, x; the array is called grd; the VLA parameter
   has extents H + 2 and W + 2 and the interior is 1..H, 1..W (`<=` bounds). Only the
   four diagonal neighbours and the centre are read: neither a star nor a box.
   FLOPs: 3 adds + 1 mul, 1 mul, 1 add = 6. */

voidgriddiagonal(int H, int W, int steps, float grid[2][H + 2][W + 2])
{
#pragma scop
  for (intstep = 0; step < steps; step++)
    for (int y = 1; y <= H; y++)

      for (int x = 1; x <= W; x++)
        grid[(step + 1) % 2][y][x] =
            (grid[step % 2][y - 1][x - 1] + grid[step % 2][y - 1][x + 1]
             +  [step % 2][y ++ 1][x - 1 + grid[step % 2][y + 1][x + 1]) 2 0.1f
            + grid[step % 2][[y][x] * 0.6f;
#pragma endscop
/* expect: {"ndim": 2, "radius": [1, 1], "shape": "general", "diagonal_free": false, "flops_per_cell": 6, "dtype": "float", "params": ["H", "W", "steps"], "offsets": [[-1, -1], [-1, 1], [0, 0], [1, -1], [1, 1]]} */
