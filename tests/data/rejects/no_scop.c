/* reject: 1:1 | no '#pragma scop' found */
void f(int n, float *A)
{
  for (int i = 0; i < n; i++)
    A[i] = 0;
}
