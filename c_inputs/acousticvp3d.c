/* acousticvp3d: the 3D acoustic wave as a first-order system on a staggered grid, pressure
   p at the cell centres and the velocities vx, vy, vz on the faces (vx[i][j][k] between
   cells (i, j, k) and (i+1, j, k)), four fields updated in place (no time dimension). Two
   sub-steps per time step, one loop nest each: the velocities from the pressure gradient,
     vx = 0.99 vx - cx (p[i+1][j][k] - p[i][j][k])   (vy, vz alike along j, k),
   then the pressure from the divergence of the new velocities,
     p = p - (dx (vx - vx[i-1][j][k]) + dy (vy - vy[i][j-1][k]) + dz (vz - vz[i][j][k-1])),
   with cx, cy, cz = 0.4999f, 0.5001f, 0.5003f (dt / (rho h) per dimension) and dx, dy, dz
   = 0.3997f, 0.4001f, 0.4003f (kappa dt / h), distinct so that a wrong offset or a
   swapped dimension changes the result. Stability (CFL): the leapfrog of the two
   sub-steps is stable while the sum over the dimensions of c * d is at most 1; here it is
   0.6. The factor 0.99f (a velocity damping, 1 - gamma dt) keeps the values bounded with
   the harness' random halo: the fixed halo pressures push on the boundary faces with a
   constant force, which would drive the undamped velocities up linearly; with the damping
   they settle (|v| about 25, |p| a few units at -s 64). BENCH_FPP 21: each velocity
   statement 4 (the damping product, the difference, its product, the subtraction), the
   pressure statement 9 (three differences and their products, two additions, the
   subtraction). */
#define BENCH_DIM 3
#define BENCH_FPP 21
#define BENCH_RAD 1
#define BENCH_FIELDS 4
#define BENCH_IN_PLACE 1

#include "common.h"

double kernel_stencil(SB_TYPE *A1, int compsize, int timestep, bool scop)
{
  double start_time = sb_time();
  int dimsize = compsize + BENCH_RAD * 2;
  size_t cells = (size_t)dimsize * (size_t)dimsize * (size_t)dimsize;
  SB_TYPE (*p)[dimsize][dimsize] = (SB_TYPE (*)[dimsize][dimsize])A1;
  SB_TYPE (*vx)[dimsize][dimsize] = (SB_TYPE (*)[dimsize][dimsize])(A1 + cells);
  SB_TYPE (*vy)[dimsize][dimsize] = (SB_TYPE (*)[dimsize][dimsize])(A1 + 2 * cells);
  SB_TYPE (*vz)[dimsize][dimsize] = (SB_TYPE (*)[dimsize][dimsize])(A1 + 3 * cells);

  if (scop) {
#pragma scop
    for (int t = 0; t < timestep; t++) {
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          for (int k = BENCH_RAD; k < dimsize - BENCH_RAD; k++) {
            vx[i][j][k] = 0.99f * vx[i][j][k] - 0.4999f * (p[i+1][j][k] - p[i][j][k]);
            vy[i][j][k] = 0.99f * vy[i][j][k] - 0.5001f * (p[i][j+1][k] - p[i][j][k]);
            vz[i][j][k] = 0.99f * vz[i][j][k] - 0.5003f * (p[i][j][k+1] - p[i][j][k]);
          }
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          for (int k = BENCH_RAD; k < dimsize - BENCH_RAD; k++)
            p[i][j][k] = p[i][j][k]
              - (0.3997f * (vx[i][j][k] - vx[i-1][j][k])
                 + 0.4001f * (vy[i][j][k] - vy[i][j-1][k])
                 + 0.4003f * (vz[i][j][k] - vz[i][j][k-1]));
    }
#pragma endscop
  }
  else {
    for (int t = 0; t < timestep; t++) {
#pragma omp parallel for
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          for (int k = BENCH_RAD; k < dimsize - BENCH_RAD; k++) {
            vx[i][j][k] = 0.99f * vx[i][j][k] - 0.4999f * (p[i+1][j][k] - p[i][j][k]);
            vy[i][j][k] = 0.99f * vy[i][j][k] - 0.5001f * (p[i][j+1][k] - p[i][j][k]);
            vz[i][j][k] = 0.99f * vz[i][j][k] - 0.5003f * (p[i][j][k+1] - p[i][j][k]);
          }
#pragma omp parallel for
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          for (int k = BENCH_RAD; k < dimsize - BENCH_RAD; k++)
            p[i][j][k] = p[i][j][k]
              - (0.3997f * (vx[i][j][k] - vx[i-1][j][k])
                 + 0.4001f * (vy[i][j][k] - vy[i][j-1][k])
                 + 0.4003f * (vz[i][j][k] - vz[i][j][k-1]));
    }
  }
  return sb_elapsed(start_time);
}
