/* reject: 2:30 | the time dimension of 'A' has 1 buffer; double buffering needs 2 */
void f(int n, int T, float A[1][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = A[t%2][i][j];
#pragma endscop
}
