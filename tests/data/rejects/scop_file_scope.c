/* reject: 2:1 | '#pragma scop' must be inside a function body */
#pragma scop
int x;
#pragma endscop
