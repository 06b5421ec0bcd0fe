/* expect: {"ndim": 2, "radius": [1, 1], "shape": "star", "diagonal_free": true, "flops_per_cell": 7, "dtype": "double", "params": ["T", "n"], "offsets": [[-1, 0], [0, -1], [0, 0], [0, 1], [1, 0]]} */
(
}
