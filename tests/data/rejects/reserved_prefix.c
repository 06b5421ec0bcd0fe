/* reject: 2:46 | identifier 'AN5D_b' is reserved for the generated code */
void f(int n, int T, float A[2][n][n], float AN5D_b)
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = AN5D_b * A[t%2][i][j];
#pragma endscop
}
