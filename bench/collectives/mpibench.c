/*
 * mpibench: the Open MPI side of bench/collectives/run.sh. It times MPI_Allreduce (float, sum),
 * MPI_Bcast and a ping-pong exactly as gorun's commbench does (OSU-style: warm-up iterations,
 * then timed iterations with a barrier after each collective call, per-rank mean, then
 * min/avg/max over ranks) and prints the same CSV columns:
 *   test,ranks,size,avg_us,min_us,max_us,mb_per_s,iterations
 *
 * usage: mpibench TEST MIN_BYTES MAX_BYTES ITERS ITERS_LARGE WARMUP WARMUP_LARGE
 *   TEST: allreduce | bcast | latency     sizes double from MIN to MAX; "large" is > 8 KiB
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LARGE 8192

static double timed(const char *test, void *sbuf, void *rbuf, long size, int iters, int warmup, int rank)
{
    double total = 0;
    for (int i = 0; i < warmup + iters; i++) {
        double t0 = 0;
        if (i == warmup)
            MPI_Barrier(MPI_COMM_WORLD);
        if (strcmp(test, "latency") == 0) {
            /* ping-pong between ranks 0 and 1; the round trip is timed, halved below */
            t0 = MPI_Wtime();
            if (rank == 0) {
                MPI_Send(sbuf, (int)size, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(rbuf, (int)size, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(rbuf, (int)size, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(sbuf, (int)size, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
            }
            if (i >= warmup)
                total += MPI_Wtime() - t0;
            continue;
        }
        t0 = MPI_Wtime();
        if (strcmp(test, "allreduce") == 0)
            MPI_Allreduce(sbuf, rbuf, (int)(size / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        else
            MPI_Bcast(sbuf, (int)size, MPI_BYTE, 0, MPI_COMM_WORLD);
        if (i >= warmup)
            total += MPI_Wtime() - t0;
        MPI_Barrier(MPI_COMM_WORLD);
    }
    return total * 1e6 / iters;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc != 8) {
        if (rank == 0)
            fprintf(stderr, "usage: mpibench TEST MIN MAX ITERS ITERS_LARGE WARMUP WARMUP_LARGE\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *test = argv[1];
    long minb = atol(argv[2]), maxb = atol(argv[3]);
    int iters = atoi(argv[4]), iters_large = atoi(argv[5]), warm = atoi(argv[6]), warm_large = atoi(argv[7]);
    int lat = strcmp(test, "latency") == 0;
    if ((!lat && strcmp(test, "allreduce") != 0 && strcmp(test, "bcast") != 0) || minb < 1 || maxb < minb ||
        iters < 1 || iters_large < 1 || (lat && np < 2)) {
        if (rank == 0)
            fprintf(stderr, "mpibench: bad arguments\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* Allocate and touch once: page faults stay out of the timed loops. */
    char *sbuf = malloc(maxb), *rbuf = malloc(maxb);
    if (!sbuf || !rbuf)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (long i = 0; i < maxb; i++)
        sbuf[i] = (char)i, rbuf[i] = 0;
    if (strcmp(test, "allreduce") == 0)
        for (long i = 0; i < maxb / 4; i++)
            ((float *)sbuf)[i] = (float)(i % 1000);
    if (rank == 0)
        printf("test,ranks,size,avg_us,min_us,max_us,mb_per_s,iterations\n");
    for (long size = minb; size <= maxb; size *= 2) {
        if (strcmp(test, "allreduce") == 0 && size < 4)
            continue;
        int it = size > LARGE ? iters_large : iters, wu = size > LARGE ? warm_large : warm;
        MPI_Barrier(MPI_COMM_WORLD);
        double us = timed(test, sbuf, rbuf, size, it, wu, rank);
        double lo, hi, sum;
        if (lat) {
            us /= 2; /* one-way, rank 0's measurement as osu_latency */
            MPI_Bcast(&us, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            lo = hi = us;
            sum = us * np;
        } else {
            MPI_Reduce(&us, &lo, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
            MPI_Reduce(&us, &hi, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            MPI_Reduce(&us, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        }
        if (rank == 0) {
            double avg = sum / np;
            printf("%s,%d,%ld,%.3f,%.3f,%.3f,%.3f,%d\n", test, np, size, avg, lo, hi, size / avg, it);
            fflush(stdout);
        }
    }
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
