/* reject: 9:28 | call of 'g', which is not a <math.h> function that can be blocked */
float g(float);
void f(int n, int T, float A[2][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = g(A[t%2][i][j]);
#pragma endscop
}
