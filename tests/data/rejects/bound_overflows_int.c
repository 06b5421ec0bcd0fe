/* reject: 5:23 | loop bound '4294967297' does not fit in an int */
void f(int n, int T, float A[2][n][n])
{
#pragma scop
  for (int t = 0; t < 4294967297; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = 0.5f * A[t%2][i][j];
#pragma endscop
}
