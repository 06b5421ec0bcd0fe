/* reject: 8:31 | subscript 't' of read-only array 'cz' uses the time loop variable 't' */
void f(int n, int T, float A[2][n][n], float cz[n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = cz[t] * A[t%2][i][j];
#pragma endscop
}
