"""dev/perf_model -- the static performance model of the CUDA backend,
driven by dev/cuda_perf_model.py. Modules, lowest first: hw (the
machine and every constant), sass (cubin reader and decoder), loops
(control flow, paths, round trips), build (nvcc, ptxas), ops (the kernel ->
op table), cost (occupancy and time), predict (per op), step (per training
step), calibrate and measured (against GPU timings), report (text)."""
