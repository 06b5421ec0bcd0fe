/* reject: 8:12 | time subscript '(t + 1) % 1' must be (t + c) % k with constants c and k >= 2 */
void f(int n, int T, float A[2][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t + 1) % 1][i][j] = A[t%2][i][j];
#pragma endscop
}
