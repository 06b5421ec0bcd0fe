/* Found by scripts/fuzz.py --coupled-malformed (issue 16): v's statement reads u's new
   value u[(t+1)%2][i][j] (a second sub-step) and then u's previous level u[t%2][i][j] at
   the same cell, which the first sub-step replaced. The analysis decided each read's value
   once per (statement, field, cell), so the old read took the new one's verdict and the
   program was accepted (and simulated wrongly); it must be refused at the old read,
   line 14 column 64. */
void stale(int T, float u[2][1][1], float v[1][1])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 0; i < 1; i++)
      for (int j = 0; j < 1; j++) {
        u[(t+1)%2][i][j] = u[t%2][i][j] - 0.5f * u[t%2][i][j];
        v[i][j] = v[i][j] - 0.5f * u[(t+1)%2][i][j] + 0.125f * u[t%2][i][j];
      }
#pragma endscop
}
