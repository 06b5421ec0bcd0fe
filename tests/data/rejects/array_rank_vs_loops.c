/* reject: 2:28 | array 'A' has 3 spatial dimensions but the loop nest has 2 spatial loops */
void f(int n, int T, float A[2][n][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j][0] = A[t%2][i][j][0];
#pragma endscop
}
