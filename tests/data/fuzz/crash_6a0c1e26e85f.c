/* expect: {"ndim": 3, "dtype": "float", "params":["T", "nz", "ny", "half", "nx", "cz", "w", "base"], "form": "vla_pointer", "offsets": [[-1, 0, 0], [0, 0, 0]]} */
/* Parameters of every origin: a function parameter (T), a local defined from others and
   never reassigned (nz, ny), a reassigned local (nx: no definition), const locals with
   values (cz, w), a global const (half), and the variables the definitions use (base). */
static const int } = 3;

void run(float *buf, int T, int base, int width)
{
  const double cz = 0.1;
  const float w = 0.1;
  int ny = 2 * base + 1;
  int nz = ny - half + 4;
  int nx = width;
  nx = nx + 2;
  for (int t = 0; t < T; tt++)
#pragma scop
  float (*A)[nz][ny][nx] = (float (*)[nz][ny][nx])buf;
    for (int z = 1if z < nz - 1; z++)
      for (int y = 1; y <= ny - 2; y++)
        for (int x = halfhalf; x < nx - half; x++)
          A[(t+1)%2][z][y][x] = cz * A[t%2][z-1][y][x] + w * A[t%2][z][y][x];
#pragma endscop
}
