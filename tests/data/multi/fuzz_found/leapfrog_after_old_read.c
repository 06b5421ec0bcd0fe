/* Found by scripts/fuzz.py --coupled-malformed (issue 16): u's statement reads its old
   level u[t%2][i][j] and then, at the same cell, the buffer it writes, u[(t+1)%2][i][j],
   which still holds the value of two steps earlier. The analysis decided each read's value
   once per (statement, field, cell), so the second read took the first one's verdict and
   the program was accepted (and simulated wrongly); it must be refused at that read,
   line 13 column 62. */
void leapfrog(int T, float u[2][1][1], float v[1][1])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 0; i < 1; i++)
      for (int j = 0; j < 1; j++) {
        u[(t+1)%2][i][j] = -(u[t%2][i][j] * 0.2f) + 0.125f * u[(t+1)%2][i][j];
        v[i][j] = v[i][j] - 0.5f * u[t%2][i][j];
      }
#pragma endscop
}
