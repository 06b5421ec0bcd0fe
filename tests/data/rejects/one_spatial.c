/* reject: 5:3 | only 1 spatial loop inside the time loop */
void f(int n, int T, float A[2][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      A[(t+1)%2][i][1] = A[t%2][i][1];
#pragma endscop
}
