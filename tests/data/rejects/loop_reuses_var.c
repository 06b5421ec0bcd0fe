/* reject: 7:7 | loop variable 'i' is already the variable of an enclosing loop */
void f(int n, int T, float A[2][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int i = 1; i < n - 1; i++)
        A[(t+1)%2][i][i] = A[t%2][i][i];
#pragma endscop
}
