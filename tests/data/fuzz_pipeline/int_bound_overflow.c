/* fuzz: {"name": "int_bound_overflow.c", "bt": 4, "bs": null, "sl": null, "opt": null, "defines": [], "include_dirs": [], "smem_wrap": true, "baseline": false, "sim_seed": 1, "signature": "sim mismatch (nondiag, wrong values)", "note": "campaign find (seed 4, analysis_forms/mixed_parity.c mutant), cleaned up; fixed: the frontend rejects loop bounds that do not fit in int"} */
void f(int n, int T, float A[2][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 4294967297; j < n - 1; j++)
        A[(t+1)%2][i][j] = 0.5f * (A[t%2][i][j] + A[t%2][i][j+1]);
#pragma endscop
}
