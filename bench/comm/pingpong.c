/* The one-way latency distribution of an MPI ping-pong between ranks 0 and 1, printed like
 * bench/comm/pingpong (the Go one), so that the two can run side by side:
 *
 *   mpicc -O2 -o /tmp/mpipingpong bench/comm/pingpong.c
 *   mpirun --allow-run-as-root --mca pml ob1 --mca btl self,vader -np 2 /tmp/mpipingpong 20000 8
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int iters = argc > 1 ? atoi(argv[1]) : 20000, size = argc > 2 ? atoi(argv[2]) : 8;
    const int warmup = 1000;
    char *buf = calloc(size > 0 ? size : 1, 1);
    double *d = malloc(sizeof(double) * iters), sum = 0;
    for (int i = -warmup; i < iters && rank < 2; i++) {
        double t0 = MPI_Wtime();
        if (rank == 0) {
            MPI_Send(buf, size, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(buf, size, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, size, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, size, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
        if (i >= 0)
            sum += d[i] = (MPI_Wtime() - t0) / 2 * 1e6;
    }
    if (rank == 0) {
        qsort(d, iters, sizeof(double), cmp);
#define Q(q) d[(int)((q) * (iters - 1))]
        printf("size %d B, %d round trips, one-way us: mean %.3f p10 %.3f p50 %.3f p90 %.3f p99 %.3f p99.9 %.1f max %.1f\n",
               size, iters, sum / iters, Q(0.1), Q(0.5), Q(0.9), Q(0.99), Q(0.999), Q(1.0));
    }
    MPI_Finalize();
    return 0;
}
