/* reject: 11:41 | call of 'g', which is not a <math.h> function */
#define WEIGHT   0.25f
#define CALL(x) g(x)
float g(float);
void f(int n, int T, float A[2][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] =   WEIGHT  *  CALL(A[t%2][i][j]);
#pragma endscop
}
