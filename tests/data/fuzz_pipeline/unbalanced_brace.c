/* fuzz: {"name": "brace.c", "bt": 4, "bs": null, "sl": null, "opt": null, "defines": [], "include_dirs": [], "smem_wrap": true, "baseline": false, "sim_seed": null, "note": "fuzz find: a lone '}' crashed pycparser (AssertionError in _pop_scope, exit 70); fixed in the frontend"} */
}
