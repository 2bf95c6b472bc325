/* The Jacobi heat solver of examples/jacobi written in C with MPI, for the side-by-side figures
 * in BENCHMARKS.md: the same grid, decomposition (MPI_Dims_create, a reordered non-periodic
 * Cartesian communicator), the same sweep and a convergence Allreduce every iteration; the halo
 * exchange by MPI_Neighbor_alltoallv or by hand with Irecv/Isend.
 *
 *   mpicc -O2 -o jacobi jacobi.c && mpirun -np 2 ./jacobi --n 512 --tol 0 --max-iter 1000
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void span(int n, int parts, int i, int *first, int *len) {
	*len = n / parts;
	if (i < n % parts) {
		*len += 1;
		*first = i * *len;
	} else {
		*first = i * *len + n % parts;
	}
}

int main(int argc, char **argv) {
	int n = 256, maxIter = 100000, alltoall = 1;
	double tol = 1e-4;
	MPI_Init(&argc, &argv);
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--n")) n = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--tol")) tol = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--max-iter")) maxIter = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--halo")) alltoall = !strcmp(argv[i + 1], "alltoall");
		else {
			fprintf(stderr, "jacobi: unknown flag %s\n", argv[i]);
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
	}
	int size, dims[2] = {0, 0}, periods[2] = {0, 0}, me[2], rank;
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Dims_create(size, 2, dims);
	MPI_Comm cart;
	MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 1, &cart);
	MPI_Comm_rank(cart, &rank);
	MPI_Cart_coords(cart, rank, 2, me);
	int r0, rows, c0, cols;
	span(n, dims[0], me[0], &r0, &rows);
	span(n, dims[1], me[1], &c0, &cols);
	int w = cols + 2;
	double *u = calloc((size_t)(rows + 2) * w, sizeof(double));
	double *next = calloc((size_t)(rows + 2) * w, sizeof(double));
	if (me[0] == 0)
		for (int j = 1; j <= cols; j++) u[j] = next[j] = 1;
	int counts[4] = {cols, cols, rows, rows};
	int displs[4] = {0, cols, 2 * cols, 2 * cols + rows};
	double *sendb = calloc(2 * cols + 2 * rows, sizeof(double));
	double *recvb = calloc(2 * cols + 2 * rows, sizeof(double));
	memcpy(recvb, u + 1, cols * sizeof(double));
	int nb[4];
	MPI_Cart_shift(cart, 0, 1, &nb[0], &nb[1]);
	MPI_Cart_shift(cart, 1, 1, &nb[2], &nb[3]);

	int iters = 0;
	double change = 0, global = 0;
	MPI_Barrier(cart);
	double start = MPI_Wtime();
	while (iters < maxIter) {
		for (int j = 0; j < cols; j++) {
			sendb[j] = u[w + 1 + j];
			sendb[cols + j] = u[rows * w + 1 + j];
		}
		for (int i = 0; i < rows; i++) {
			sendb[2 * cols + i] = u[(i + 1) * w + 1];
			sendb[2 * cols + rows + i] = u[(i + 1) * w + cols];
		}
		if (alltoall) {
			MPI_Neighbor_alltoallv(sendb, counts, displs, MPI_DOUBLE, recvb, counts, displs, MPI_DOUBLE, cart);
		} else {
			MPI_Request reqs[8];
			int k = 0;
			for (int s = 0; s < 4; s++) {
				if (nb[s] == MPI_PROC_NULL) continue;
				MPI_Irecv(recvb + displs[s], counts[s], MPI_DOUBLE, nb[s], s ^ 1, cart, &reqs[k++]);
				MPI_Isend(sendb + displs[s], counts[s], MPI_DOUBLE, nb[s], s, cart, &reqs[k++]);
			}
			MPI_Waitall(k, reqs, MPI_STATUSES_IGNORE);
		}
		for (int j = 0; j < cols; j++) {
			u[j + 1] = recvb[j];
			u[(rows + 1) * w + 1 + j] = recvb[cols + j];
		}
		for (int i = 0; i < rows; i++) {
			u[(i + 1) * w] = recvb[2 * cols + i];
			u[(i + 1) * w + cols + 1] = recvb[2 * cols + rows + i];
		}
		change = 0;
		for (int i = 1; i <= rows; i++) {
			for (int j = 1; j <= cols; j++) {
				int k = i * w + j;
				double v = 0.25 * (u[k - w] + u[k + w] + u[k - 1] + u[k + 1]);
				change = fmax(change, fabs(v - u[k]));
				next[k] = v;
			}
		}
		double *t = u;
		u = next;
		next = t;
		iters++;
		MPI_Allreduce(&change, &global, 1, MPI_DOUBLE, MPI_MAX, cart);
		if (global < tol) break;
	}
	double per = (MPI_Wtime() - start) / (iters > 0 ? iters : 1);
	if (rank == 0)
		printf("jacobi-c: %d x %d grid on %d x %d ranks (halo: %s): %d iterations, last change %.3g, %.2f us per iteration\n",
		       n, n, dims[0], dims[1], alltoall ? "alltoall" : "sendrecv", iters, global, per * 1e6);
	MPI_Finalize();
	return 0;
}
