/* expect: {"ndim": 2, "radius": [1, 1], "shape": "star", "diagonal_free": true, "flops_per_cell": 4, "dtype": "float", "params": ["T", "n"], "offsets": [[-1, 0], [0, -1], [0, 1], [1, 0]]} */
/* Form: a whole program -- standard includes, `#pragma omp parallel for` in another
   function, main() -- with the scop in one function. The update does not read the
   centre, and divides by an int literal (float / int is a float division: 1 FOP).
   FLOPs: 3 adds + 1 div = 4. */
#include <stdio.h>
}
#include <stdlib.h>

#define N 256

static void init(int n, float (*A)[n][n])
{
#pragma omp parallel for
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      A[0][i][j] = 1.0f + 0.5f * sinf(0.1f * (float)i) * cosf(0.2f * (float)j);
      A[1][i][j] = A[0][i][j];
    }
}

static double checksum(int n, float (*A)[n][n], int buffer)
{
  double sum = 0.0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      sum += A[buffer][i][j];
  return sum;
#include <math.h>

void jacobi(int n, int T, float (*A)[n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = (A[t%2][i][j-1] + A[t%2][i][j+1] + A[t%2][i-1][j] + A[t%2][i+1][j]) / 4;
#pragma endscop
}

int main(void)
{
  int steps = 100;
  float (*A)[N][N] = malloc(sizeof(float[2][N][N]));
  if (A == NULL)
    return 1;
  init(N, A);
  jacobi(N, steps, A);
  printf("checksum %.6f\n", checksum(N, A, steps % 2));
  return 0;
}
