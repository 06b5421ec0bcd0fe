/* reject: 2:31 | 'A' is declared as pointer to pointer to pointer to float; an5dpy needs a declaration that gives every spatial extent */
void f(int n, int T, float ***A)
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = A[t%2][i][j];
#pragma endscop
}
