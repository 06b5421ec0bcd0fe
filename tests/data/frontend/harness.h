/* A benchmark harness header like the AN5D benchmarks' common.h: system headers the
 * frontend must read quickly (through pycparser's stand-in libc), timing helpers, macros. */
#ifndef AN5DPY_TEST_HARNESS_H
#define AN5DPY_TEST_HARNESS_H

#include <assert.h>
#include <float.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#ifndef SB_TYPE
#define SB_TYPE float
#endif

static double sb_time(void)
{
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (double)tv.tv_sec + (double)tv.tv_usec * 1e-6;
}

static void *sb_alloc(size_t bytes)
{
  void *p = malloc(bytes);
  if (p == NULL) {
    fprintf(stderr, "out of memory\n");
    exit(EXIT_FAILURE);
  }
  return p;
}

static int sb_parse_int(const char *text, int fallback)
{
  char *end = NULL;
  long v = strtol(text, &end, 10);
  return (end != text && v > 0 && v < INT_MAX) ? (int)v : fallback;
}

#endif
