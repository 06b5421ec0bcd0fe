/* Found by scripts/fuzz.py --coupled: a double-buffered field (u) whose nest stops short
   of the box around every nest (v's). Its cells outside its nest are never written, so
   each of u's buffers keeps its own values there; a launch of even degree once stored
   the values of the other buffer there (a FAIL with 4 steps and --bt 2). */
void kernel(int T, float u[2][1][2], float v[1][2]) {
#pragma scop
  for (int t = 0; t < T; t++) {
    for (int i = 0; i < 1; i++) for (int j = 0; j < 1; j++) u[(t+1)%2][i][j] = 0.5f * u[t%2][i][j];
    for (int i = 0; i < 1; i++) for (int j = 0; j < 2; j++) v[i][j] = v[i][j] + u[t%2][i][j];
  }
#pragma endscop
}
