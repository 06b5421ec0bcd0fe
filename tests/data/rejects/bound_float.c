/* reject: 7:25 | loop bound uses 'x' of type double; it must be an integer */
void f(int n, int T, float A[2][n][n])
{
  double x = 3;
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < x; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = A[t%2][i][j];
#pragma endscop
}
