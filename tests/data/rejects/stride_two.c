/* reject: 7:34 | non-unit loop stride: 'j += 2' (only loops that step by +1 */
void f(int n, int T, float A[2][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j += 2)
        A[(t+1)%2][i][j] = A[t%2][i][j];
#pragma endscop
}
