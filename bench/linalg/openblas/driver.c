// driver: times OpenBLAS's DGEMM or DGETRF on random column-major
// matrices, for side-by-side comparison with gorun's linalg (bench.sh).
// Usage: driver dgemm|dgetrf N REPS   (threads: OPENBLAS_NUM_THREADS)
// Prints: <routine> n=<N> best_s=<best wall seconds> gflops=<GFLOP/s of it>
//         cpu_s=<least process CPU seconds of a run: all threads, so a
//         load-independent cross-check for one thread>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cblas.h>

extern void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);

static double clk(clockid_t id) {
	struct timespec ts;
	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
	if (argc != 4) {
		fprintf(stderr, "usage: %s dgemm|dgetrf N REPS\n", argv[0]);
		return 2;
	}
	const char *routine = argv[1];
	int n = atoi(argv[2]), reps = atoi(argv[3]);
	if (n <= 0 || reps <= 0) {
		fprintf(stderr, "bad N or REPS\n");
		return 2;
	}
	size_t nn = (size_t)n * n;
	double *a = malloc(nn * sizeof *a), *b = malloc(nn * sizeof *b), *c = malloc(nn * sizeof *c), *a0 = malloc(nn * sizeof *a0);
	int *ipiv = malloc(n * sizeof *ipiv);
	if (!a || !b || !c || !a0 || !ipiv) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	srand(1);
	for (size_t i = 0; i < nn; i++) {
		a0[i] = 2.0 * rand() / RAND_MAX - 1;
		b[i] = 2.0 * rand() / RAND_MAX - 1;
		c[i] = 0;
	}
	double best = 1e30, bestcpu = 1e30, flops;
	int dgemm = strcmp(routine, "dgemm") == 0;
	if (!dgemm && strcmp(routine, "dgetrf") != 0) {
		fprintf(stderr, "unknown routine %s\n", routine);
		return 2;
	}
	flops = dgemm ? 2.0 * n * n * n : 2.0 * n * n * n / 3.0;
	memcpy(a, a0, nn * sizeof *a);
	for (int r = 0; r <= reps; r++) { // run 0 warms up
		if (!dgemm) memcpy(a, a0, nn * sizeof *a);
		double t0 = clk(CLOCK_MONOTONIC), c0 = clk(CLOCK_PROCESS_CPUTIME_ID);
		if (dgemm) {
			cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a, n, b, n, 0.0, c, n);
		} else {
			int info;
			dgetrf_(&n, &n, a, &n, ipiv, &info);
			if (info != 0) {
				fprintf(stderr, "dgetrf info=%d\n", info);
				return 1;
			}
		}
		double t = clk(CLOCK_MONOTONIC) - t0, tc = clk(CLOCK_PROCESS_CPUTIME_ID) - c0;
		if (r > 0 && t < best) best = t;
		if (r > 0 && tc < bestcpu) bestcpu = tc;
	}
	printf("%s n=%d best_s=%.6f gflops=%.2f cpu_s=%.6f\n", routine, n, best, flops / best / 1e9, bestcpu);
	return 0;
}
