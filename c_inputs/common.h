/* common.h -- benchmark harness for the stencil programs in this directory.
 *
 * A benchmark file defines BENCH_DIM (2 or 3), BENCH_FPP (FLOPs per cell update: every
 * statement of one time step, for one cell) and BENCH_RAD (stencil radius), includes this
 * header, and defines
 *
 *     double kernel_stencil(SB_TYPE *A1, int compsize, int timestep, bool scop);
 *
 * which runs `timestep` steps on the two time buffers stored back to back in A1 (each
 * dimsize^BENCH_DIM elements, dimsize = compsize + 2 * BENCH_RAD) and returns the time
 * taken in seconds. With scop true it runs the #pragma scop region (the code an5dpy
 * replaces with GPU code), with scop false the plain CPU/OpenMP copy of the loop nest.
 *
 * Optional macros describe programs beyond that double-buffered form:
 *
 *   BENCH_LEVELS  time buffers per field (default 2). A program that defines it keeps part
 *                 of its state in every buffer: a k-level rotation that writes buffer
 *                 (t + BENCH_LEVELS - 1) % BENCH_LEVELS in step t (p[(t+2)%3] from
 *                 p[(t+1)%3] and p[t%3]), or a leapfrog in two buffers (u[(t+1)%2] from
 *                 u[t%2] and itself); -c then compares every buffer. A program that leaves
 *                 it undefined is a two-buffer iteration whose other buffer is scratch (the
 *                 generated code leaves an earlier time level there, which one depends on
 *                 its launch plan), and -c compares only the buffer the last step wrote.
 *   BENCH_FIELDS  fields, the arrays the time step writes (default 1). A1 holds them back
 *                 to back, each field its BENCH_LEVELS time buffers (u[2][n][n] then
 *                 v[2][n][n]); the rule of BENCH_LEVELS applies to each field.
 *   BENCH_IN_PLACE  1: the fields have no time dimension (ey[n][n], updated in place, as
 *                 PolyBench's fdtd-2d does); each field is one buffer of dimsize^BENCH_DIM
 *                 elements, -c compares all of them, and BENCH_LEVELS must stay undefined.
 *                 0 (the default): every field has BENCH_LEVELS time buffers.
 *   BENCH_COEFS   read-only coefficient arrays (default 0). With BENCH_COEFS > 0 the
 *                 function is
 *
 *     double kernel_stencil(SB_TYPE *A1, SB_TYPE *C1, int compsize, int timestep, bool scop);
 *
 *                 and C1 holds BENCH_COEFS arrays of dimsize^BENCH_DIM elements each, back
 *                 to back (a program may use only the first dimsize elements of one, e.g.
 *                 a per-plane coefficient), filled once with fixed-seed random values in
 *                 [BENCH_COEF_LO, BENCH_COEF_HI) (defaults 0.5 and 1.5).
 *
 * Every buffer of A1, boundaries included, starts from fixed-seed random values in
 * [0.5, 1.5) (one stream over all of A1, in memory order). The "Checksum" line of -c sums,
 * over every field, the buffer the last step wrote (buffer (timestep + BENCH_LEVELS - 2) %
 * BENCH_LEVELS of the field; its only buffer when BENCH_IN_PLACE is 1).
 *
 * The element type comes from the command line: -D SB_TYPE=float or -D SB_TYPE=double.
 *
 * Plain C99 that is also valid C++ (nvcc compiles the generated files as CUDA C++):
 * malloc results are cast, no designated initialisers, bool from <stdbool.h>.
 *
 * Usage of the resulting program:  prog [-s compsize] [-t timesteps] [-n repeats] [-c] [-h]
 */
#ifndef SB_COMMON_H
#define SB_COMMON_H

#if !defined(__cplusplus) && !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
/* getopt() and clock_gettime() are POSIX; ask for them even under a strict -std=c99. */
#define _POSIX_C_SOURCE 200809L
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <stdint.h>
#include <stdbool.h>
#include <unistd.h>
#include <time.h>

#ifndef SB_TYPE
/* an5dpy reads these files through the C preprocessor, so this is also what a command
   without --dtype prints (with this line's FILE:LINE:COL). */
#error "SB_TYPE is not defined: give an5dpy --dtype float or --dtype double (a C compiler: -D SB_TYPE=float or -D SB_TYPE=double)"
#endif
#if !defined(BENCH_DIM) || !defined(BENCH_FPP) || !defined(BENCH_RAD)
#error "define BENCH_DIM, BENCH_FPP and BENCH_RAD before including common.h"
#endif
#if BENCH_DIM != 2 && BENCH_DIM != 3
#error "BENCH_DIM must be 2 or 3"
#endif

#ifndef BENCH_FIELDS
#define BENCH_FIELDS 1
#endif
#if BENCH_FIELDS < 1
#error "BENCH_FIELDS must be at least 1"
#endif
#ifndef BENCH_IN_PLACE
#define BENCH_IN_PLACE 0
#endif
#if BENCH_IN_PLACE != 0 && BENCH_IN_PLACE != 1
#error "BENCH_IN_PLACE must be 0 or 1"
#endif

/* SB_EVERY_LEVEL: whether -c compares every buffer of a field (see BENCH_LEVELS above);
   SB_BUFFERS: buffers per field. An in-place field is one buffer, its only time level. */
#if BENCH_IN_PLACE
#ifdef BENCH_LEVELS
#error "BENCH_IN_PLACE 1: a field is one buffer, leave BENCH_LEVELS undefined"
#endif
#define SB_BUFFERS 1
#define SB_EVERY_LEVEL 1
#else
#ifdef BENCH_LEVELS
#define SB_EVERY_LEVEL 1
#else
#define BENCH_LEVELS 2
#define SB_EVERY_LEVEL 0
#endif
#if BENCH_LEVELS < 2
#error "BENCH_LEVELS must be at least 2"
#endif
#define SB_BUFFERS BENCH_LEVELS
#endif
#ifndef BENCH_COEFS
#define BENCH_COEFS 0
#endif
#if BENCH_COEFS < 0
#error "BENCH_COEFS must not be negative"
#endif
#ifndef BENCH_COEF_LO
#define BENCH_COEF_LO 0.5
#endif
#ifndef BENCH_COEF_HI
#define BENCH_COEF_HI 1.5
#endif

/* The benchmark files mark their loop nest with #pragma scop / #pragma endscop, which
   only an5dpy reads; keep gcc's -Wall (-Wunknown-pragmas) quiet about them. */
#if defined(__GNUC__) && !defined(__cplusplus)
#pragma GCC diagnostic ignored "-Wunknown-pragmas"
#endif

#define SB_STR2(x) #x
#define SB_STR(x) SB_STR2(x)

/* ------------------------------------------------------------------------- timing */

/* Wall-clock time in seconds (monotonic clock). */
static double sb_time(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Generated GPU code reports its kernel-only time (host<->device copies excluded)
   through this macro; kernel_stencil then returns it instead of the wall time. */
static double sb_kernel_seconds = -1.0;
#define AN5D_REPORT_KERNEL_TIME(seconds) (sb_kernel_seconds = (seconds))

/* Time since `start`, or the kernel time reported through AN5D_REPORT_KERNEL_TIME
   since the last call (which is then consumed). */
static double sb_elapsed(double start)
{
  double now = sb_time();
  if (sb_kernel_seconds >= 0.0) {
    double kernel = sb_kernel_seconds;
    sb_kernel_seconds = -1.0;
    return kernel;
  }
  return now - start;
}

/* ------------------------------------------------------------------------- helpers */

#if BENCH_COEFS > 0
double kernel_stencil(SB_TYPE *A1, SB_TYPE *C1, int compsize, int timestep, bool scop);
#else
double kernel_stencil(SB_TYPE *A1, int compsize, int timestep, bool scop);
#endif

/* One call of kernel_stencil, with the coefficient arrays where the program has them. */
static double sb_run(SB_TYPE *buffers, SB_TYPE *coefs, int compsize, int timestep, bool scop)
{
#if BENCH_COEFS > 0
  return kernel_stencil(buffers, coefs, compsize, timestep, scop);
#else
  (void)coefs;
  return kernel_stencil(buffers, compsize, timestep, scop);
#endif
}

/* A fixed-seed 64-bit generator (splitmix64), so the input data are the same on every
   platform and compiler. */
static uint64_t sb_rng_next(uint64_t *state)
{
  uint64_t z;
  *state += 0x9E3779B97F4A7C15ULL;
  z = *state;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/* A value in [0.5, 1.5) on a grid of 2^-23, so float and double hold it exactly and
   both element types start from the same numbers. */
static SB_TYPE sb_rng_value(uint64_t *state)
{
  uint64_t bits = sb_rng_next(state) >> 41; /* 23 random bits */
  return (SB_TYPE)(0.5 + (double)bits * (1.0 / 8388608.0));
}

#if BENCH_COEFS > 0
/* A coefficient in [BENCH_COEF_LO, BENCH_COEF_HI), uniform over the grid of 2^-23 in that
   range (float and double hold such a value exactly where |value| < 2), passed through
   float so that both element types read the same numbers whatever the range. */
static SB_TYPE sb_coef_value(uint64_t *state)
{
  double first = ceil((double)(BENCH_COEF_LO) * 8388608.0);
  double count = ceil((double)(BENCH_COEF_HI) * 8388608.0) - first;
  double unit = (double)(sb_rng_next(state) >> 11) * (1.0 / 9007199254740992.0); /* [0, 1) */
  return (SB_TYPE)(float)((first + floor(unit * count)) / 8388608.0);
}
#endif

/* Parses a whole decimal integer in [lo, hi]; returns false on anything else. */
static bool sb_parse_int(const char *text, long lo, long hi, int *out)
{
  char *end = NULL;
  long value;
  if (text == NULL || *text == '\0')
    return false;
  value = strtol(text, &end, 10);
  if (*end != '\0' || value < lo || value > hi)
    return false;
  *out = (int)value;
  return true;
}

static void sb_usage(FILE *to, const char *prog)
{
  fprintf(to,
          "usage: %s [-s compsize] [-t timesteps] [-n repeats] [-c] [-h]\n"
          "  -s compsize   interior cells per dimension (default %d)\n"
          "  -t timesteps  time steps per run (default 100)\n"
          "  -n repeats    timed runs after one warm-up run (default 5)\n"
          "  -c            also run the CPU version and compare the results\n"
          "  -h            this help\n",
          prog, BENCH_DIM == 2 ? 1024 : 256);
}

/* ------------------------------------------------------------------------- main */

int main(int argc, char **argv)
{
  int compsize = BENCH_DIM == 2 ? 1024 : 256;
  int timesteps = 100;
  int repeats = 5;
  bool compare = false;
  int opt;
  int dimsize;
  size_t cells, elems, bytes;
  SB_TYPE *init, *work, *ref = NULL, *coefs = NULL;
  uint64_t rng = 0x5EED5EED2020CD0FULL;
  double total = 0.0, avg, gflops;
  size_t e;
  int r;

  while ((opt = getopt(argc, argv, "s:t:n:ch")) != -1) {
    switch (opt) {
    case 's':
      if (!sb_parse_int(optarg, 1, 1L << 30, &compsize)) {
        fprintf(stderr, "%s: bad -s value '%s' (want an integer >= 1)\n", argv[0], optarg);
        return 2;
      }
      break;
    case 't':
      if (!sb_parse_int(optarg, 1, 2147483647L, &timesteps)) {
        fprintf(stderr, "%s: bad -t value '%s' (want an integer >= 1)\n", argv[0], optarg);
        return 2;
      }
      break;
    case 'n':
      if (!sb_parse_int(optarg, 1, 2147483647L, &repeats)) {
        fprintf(stderr, "%s: bad -n value '%s' (want an integer >= 1)\n", argv[0], optarg);
        return 2;
      }
      break;
    case 'c':
      compare = true;
      break;
    case 'h':
      sb_usage(stdout, argv[0]);
      return 0;
    default:
      sb_usage(stderr, argv[0]);
      return 2;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0], argv[optind]);
    sb_usage(stderr, argv[0]);
    return 2;
  }

  dimsize = compsize + 2 * BENCH_RAD;
  {
    /* Reject sizes whose byte count would not fit in size_t. */
    double need = (double)(BENCH_FIELDS * SB_BUFFERS + BENCH_COEFS) * (double)sizeof(SB_TYPE);
    int d;
    for (d = 0; d < BENCH_DIM; d++)
      need *= (double)dimsize;
    if (need >= (double)SIZE_MAX / 4) {
      fprintf(stderr, "%s: -s %d is too large\n", argv[0], compsize);
      return 2;
    }
  }
  cells = (size_t)dimsize * (size_t)dimsize;
  if (BENCH_DIM == 3)
    cells *= (size_t)dimsize;
  elems = (size_t)BENCH_FIELDS * (size_t)SB_BUFFERS * cells;
  bytes = elems * sizeof(SB_TYPE);

  init = (SB_TYPE *)malloc(bytes);
  work = (SB_TYPE *)malloc(bytes);
  if (compare)
    ref = (SB_TYPE *)malloc(bytes);
  if (init == NULL || work == NULL || (compare && ref == NULL)) {
    fprintf(stderr, "%s: cannot allocate %d buffers of %zu bytes\n", argv[0],
            compare ? 3 : 2, bytes);
    return 1;
  }
  /* Every buffer of every field, boundaries included, gets independent values. */
  for (e = 0; e < elems; e++)
    init[e] = sb_rng_value(&rng);
#if BENCH_COEFS > 0
  /* The coefficients, from a generator of their own (the buffers' values do not depend on
     BENCH_COEFS); the runs only read them, so they are filled once. */
  coefs = (SB_TYPE *)malloc((size_t)BENCH_COEFS * cells * sizeof(SB_TYPE));
  if (coefs == NULL) {
    fprintf(stderr, "%s: cannot allocate %d coefficient arrays of %zu bytes\n", argv[0],
            BENCH_COEFS, cells * sizeof(SB_TYPE));
    return 1;
  }
  {
    uint64_t coef_rng = 0xC0EF5EED2020CD0FULL;
    for (e = 0; e < (size_t)BENCH_COEFS * cells; e++)
      coefs[e] = sb_coef_value(&coef_rng);
  }
#endif

  printf("Stencil: %dD, radius %d, %d FLOP/cell, SB_TYPE %s\n", BENCH_DIM, BENCH_RAD,
         BENCH_FPP, SB_STR(SB_TYPE));
  printf("Size: %d^%d (+%d halo per side), timesteps %d, repeats %d\n", compsize,
         BENCH_DIM, BENCH_RAD, timesteps, repeats);
#if BENCH_IN_PLACE
  printf("Fields: %d back to back, each one buffer updated in place, -c compares every one\n",
         BENCH_FIELDS);
#else
#if BENCH_FIELDS > 1
  printf("Fields: %d back to back, each %d time buffers\n", BENCH_FIELDS, BENCH_LEVELS);
#endif
#if SB_EVERY_LEVEL
  printf("Time buffers: %d, -c compares every one\n", BENCH_LEVELS);
#endif
#endif
#if BENCH_COEFS > 0
  printf("Coefficient arrays: %d, values in [%g, %g)\n", BENCH_COEFS,
         (double)(BENCH_COEF_LO), (double)(BENCH_COEF_HI));
#endif

  /* Warm-up run. */
  memcpy(work, init, bytes);
  (void)sb_run(work, coefs, compsize, timesteps, true);

  for (r = 0; r < repeats; r++) {
    memcpy(work, init, bytes);
    total += sb_run(work, coefs, compsize, timesteps, true);
  }
  avg = total / repeats;
  gflops = pow((double)compsize, (double)BENCH_DIM) * (double)BENCH_FPP * (double)timesteps
           / avg / 1e9;
  printf("Average: %.3f GFLOPS, %.3f ms\n", gflops, avg * 1e3);

  if (compare) {
    /* Step t writes buffer (t + SB_BUFFERS - 1) % SB_BUFFERS of every field. */
    const size_t last = ((size_t)timesteps + SB_BUFFERS - 2) % SB_BUFFERS;
    const size_t first = SB_EVERY_LEVEL ? 0 : last;
    const size_t count = (SB_EVERY_LEVEL ? (size_t)SB_BUFFERS : 1) * cells;
    double max_abs = 0.0, max_rel = 0.0, sum = 0.0;
    bool nan_seen = false, identical = true;
    size_t f, c;

    memcpy(ref, init, bytes);
    (void)sb_run(ref, coefs, compsize, timesteps, false);
    /* Each field's compared buffers, [first, first + count / cells), in memory order. */
    for (f = 0; f < (size_t)BENCH_FIELDS; f++) {
      const size_t offset = (f * SB_BUFFERS + first) * cells;
      const SB_TYPE *got = work + offset;
      const SB_TYPE *want = ref + offset;
      for (c = 0; c < count; c++) {
        double a = (double)got[c], b = (double)want[c];
        double diff = fabs(a - b);
        double rel = diff / fmax(fabs(b), 1e-30);
        if (isnan(diff)) {
          if (!(isnan(a) && isnan(b)))
            nan_seen = true;
          continue;
        }
        if (diff > max_abs)
          max_abs = diff;
        if (rel > max_rel)
          max_rel = rel;
        if (first + c / cells == last)
          sum += b;
      }
      if (memcmp(got, want, count * sizeof(SB_TYPE)) != 0)
        identical = false;
    }
    if (nan_seen)
      printf("Max error: nan (relative nan)\n");
    else
      printf("Max error: %.9g (relative %.9g)\n", max_abs, max_rel);
    printf("Bit-identical: %s\n", identical ? "yes" : "no");
    printf("Checksum (CPU result): %.17g\n", sum);
    free(ref);
  }

  free(coefs);
  free(work);
  free(init);
  return 0;
}

#endif /* SB_COMMON_H */
