/* reject: 4:1 | empty scop: no loop nest between */
void f(int n, int T, float A[2][n][n])
{
#pragma scop
#pragma endscop
}
