/* reject: 6:12 | loop 't' of type int starts at 't0', a value its type cannot always hold: when t0 = 4294967295 (unsigned int), C converts it to -1 */
void f(int n, int T, unsigned int t0, float A[2][n][n])
{
  int t;
#pragma scop
  for (t = t0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = 0.5f * (A[t%2][i-1][j] + A[t%2][i+1][j]);
#pragma endscop
}
