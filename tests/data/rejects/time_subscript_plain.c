/* reject: 8:30 | time subscript 't' must be (t + c) % k with constants c and k >= 2 (the array rotates through k time buffers */
void f(int n, int T, float A[2][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = A[t][i][j];
#pragma endscop
}
