/* reject: 2:53 | fields 'u' and 'v' have different extents ([n][n] and [n][m]): every array the time step writes must have the same spatial extents */
void f(int n, int m, int T, float u[2][n][n], float v[2][n][m])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++) {
        u[(t+1)%2][i][j] = u[t%2][i][j] - v[t%2][i][j];
        v[(t+1)%2][i][j] = v[t%2][i][j] + u[t%2][i][j];
      }
#pragma endscop
}
