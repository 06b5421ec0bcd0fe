/* reject: 9:9 | the statement writes 'x' */
void f(int n, int T, float A[2][n][n])
{
  float x;
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        x = A[t%2][i][j];
#pragma endscop
}
