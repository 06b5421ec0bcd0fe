/* reject: 8:9 | undeclared array 'B' */
void f(int n, int T)
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        B[(t+1)%2][i][j] = B[t%2][i][j];
#pragma endscop
}
