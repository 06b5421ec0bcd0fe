/* fuzz: {"name": "vla3d_star.c", "bt": 1, "bs": null, "sl": 1000, "opt": "auto", "defines": [], "include_dirs": ["tests/data/forms"], "smem_wrap": true, "baseline": true, "sim_seed": null, "note": "fuzz find (of the checker): '#pragma scop' inside a comment before the scop; the host file keeps the comment verbatim and replaces only the real pragma"} */
/* Form: a 3D star in the VLA-pointer-cast form, extents [nz + 2][ny + 2][nx + 2], the
#pragma scop
   FLOPs: 7 muls + 6 adds = 13. */star3d(int nz,int ny,int nx,int T,float){float(*A)[nz+2][ny+2][nx+2]=(float()[])buf;
#pragma scop
for(int t=0;t<T;t++)for(int z=1;z<=nz;z++)for(int y=1;y<=ny;y++)for(int x=1;x<=nx;x++)A[(t+1)%2][z][y][x]=0.31f*A[t%2][z][y][x]+A[t%2][z][y][x-1]+A[t%2][z][y][x+1];
#pragma endscop
}