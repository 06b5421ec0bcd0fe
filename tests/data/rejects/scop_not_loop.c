/* reject: 5:3 | the scop must hold a for loop (the time loop), not 'n = 3' */
void f(int n, int T, float A[2][n][n])
{
#pragma scop
  n = 3;
#pragma endscop
}
