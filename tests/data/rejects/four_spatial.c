/* reject: 9:11 | more than 3 spatial loops */
void f(int n, int T, float A[2][n][n][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        for (int k = 1; k < n - 1; k++)
          for (int l = 1; l < n - 1; l++)
            A[(t+1)%2][i][j][k][l] = A[t%2][i][j][k][l];
#pragma endscop
}
