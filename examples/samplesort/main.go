// Command samplesort sorts keys spread over the ranks with a parallel sample sort: each rank
// sorts its keys and contributes evenly spaced samples; all ranks pick the same splitters from
// the gathered samples; an Alltoallv sends every key to the rank owning its range; each rank
// sorts what it received. Rank r then holds the r-th range of the sorted keys.
//
//	gorun -n 4 ./examples/samplesort --keys 10000000
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/comm"
)

func main() {
	n := flag.Int("keys", 1_000_000, "keys per rank")
	keyRange := flag.Uint64("range", 0, "keys lie in [0, range) (0: all 64-bit values); a small range makes many duplicates")
	seed := flag.Uint64("seed", 1, "seed of the keys")
	out := flag.String("out", "", "write the sorted keys to this file, one per line (rank 0)")
	flag.Parse()

	c, err := comm.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "samplesort:", err)
		os.Exit(1)
	}
	if err := run(c, *n, *keyRange, *seed, *out); err != nil {
		fmt.Fprintf(os.Stderr, "samplesort: rank %d: %v\n", c.Rank(), err)
		os.Exit(1)
	}
	if err := c.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "samplesort:", err)
		os.Exit(1)
	}
}

// keys generates rank's n keys from its own stream of the seed.
func keys(seed uint64, rank, n int, keyRange uint64) []uint64 {
	rng := rand.New(rand.NewPCG(seed, uint64(rank)))
	k := make([]uint64, n)
	for i := range k {
		if keyRange == 0 {
			k[i] = rng.Uint64()
		} else {
			k[i] = rng.Uint64N(keyRange)
		}
	}
	return k
}

func run(c *comm.Comm, n int, keyRange, seed uint64, out string) error {
	if n < 1 {
		return fmt.Errorf("--keys %d: want at least 1 key per rank", n)
	}
	start := time.Now()
	sorted, err := sampleSort(c, keys(seed, c.Rank(), n, keyRange))
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	if err := verify(c, sorted, n); err != nil {
		return err
	}
	// Bucket sizes show how even the splitters made the load.
	lo, hi := []int64{int64(len(sorted))}, []int64{int64(len(sorted))}
	if err := collectives.Allreduce(c, nil, lo, collectives.Min[int64]()); err != nil {
		return err
	}
	if err := collectives.Allreduce(c, nil, hi, collectives.Max[int64]()); err != nil {
		return err
	}
	if c.Rank() == 0 {
		fmt.Printf("samplesort: %d keys on %d ranks sorted in %.3f s; keys per rank after the exchange: %d to %d\n",
			n*c.Size(), c.Size(), elapsed.Seconds(), lo[0], hi[0])
	}
	if out != "" {
		return gatherAndWrite(c, sorted, out)
	}
	return nil
}

// sampleSort sorts the keys of all ranks and returns this rank's range of the result.
func sampleSort(c *comm.Comm, local []uint64) ([]uint64, error) {
	p := c.Size()
	slices.Sort(local)
	// p samples per rank at evenly spaced positions of the sorted keys (oversampling by p
	// keeps the buckets within a small factor of n each, whatever the distribution).
	samples := make([]uint64, p)
	for i := range samples {
		samples[i] = local[(i+1)*len(local)/(p+1)]
	}
	all := make([]uint64, p*p)
	if err := collectives.Allgather(c, samples, all); err != nil {
		return nil, err
	}
	slices.Sort(all)
	// p-1 splitters: bucket j holds the keys in (splitters[j-1], splitters[j]]. Every rank
	// computes the same ones from the same samples.
	splitters := make([]uint64, p-1)
	for j := range splitters {
		splitters[j] = all[(j+1)*p]
	}
	// The local keys are sorted, so bucket j is a contiguous run: find its end.
	sendcounts, sdispls := make([]int, p), make([]int, p)
	prev := 0
	for j := 0; j < p; j++ {
		end := len(local)
		if j < p-1 {
			end = sort.Search(len(local), func(i int) bool { return local[i] > splitters[j] })
		}
		sdispls[j], sendcounts[j] = prev, end-prev
		prev = end
	}
	// Tell every rank how many keys it gets from us, then send them.
	sc, rc := make([]int64, p), make([]int64, p)
	for j := range sc {
		sc[j] = int64(sendcounts[j])
	}
	if err := collectives.Alltoall(c, sc, rc); err != nil {
		return nil, err
	}
	recvcounts, rdispls := make([]int, p), make([]int, p)
	total := 0
	for j := range rc {
		recvcounts[j], rdispls[j] = int(rc[j]), total
		total += int(rc[j])
	}
	mine := make([]uint64, total)
	if err := collectives.Alltoallv(c, local, sendcounts, sdispls, mine, recvcounts, rdispls); err != nil {
		return nil, err
	}
	// p sorted runs: a final sort of them (a p-way merge would do less work).
	slices.Sort(mine)
	return mine, nil
}

// verify checks the result collectively: every rank's keys are sorted, each rank's first key
// is not below the previous non-empty rank's last, and no key was lost or made up.
func verify(c *comm.Comm, sorted []uint64, n int) error {
	if !slices.IsSorted(sorted) {
		return fmt.Errorf("keys not sorted on rank %d", c.Rank())
	}
	// Every rank's count, first and last key (count 0: no keys).
	mine := []uint64{uint64(len(sorted)), 0, 0}
	if len(sorted) > 0 {
		mine[1], mine[2] = sorted[0], sorted[len(sorted)-1]
	}
	all := make([]uint64, 3*c.Size())
	if err := collectives.Allgather(c, mine, all); err != nil {
		return err
	}
	total, last, seen := uint64(0), uint64(0), false
	for r := 0; r < c.Size(); r++ {
		cnt, first, end := all[3*r], all[3*r+1], all[3*r+2]
		total += cnt
		if cnt == 0 {
			continue
		}
		if seen && first < last {
			return fmt.Errorf("rank %d's first key %d is below the previous rank's last %d", r, first, last)
		}
		last, seen = end, true
	}
	if total != uint64(n*c.Size()) {
		return fmt.Errorf("%d keys after the sort, %d before", total, n*c.Size())
	}
	return nil
}

// gatherAndWrite collects the sorted ranges on rank 0, in rank order, and writes them.
func gatherAndWrite(c *comm.Comm, sorted []uint64, path string) error {
	counts := make([]int64, c.Size())
	if err := collectives.Allgather(c, []int64{int64(len(sorted))}, counts); err != nil {
		return err
	}
	cnt, displs := make([]int, c.Size()), make([]int, c.Size())
	total := 0
	for r, k := range counts {
		cnt[r], displs[r] = int(k), total
		total += int(k)
	}
	var all []uint64
	if c.Rank() == 0 {
		all = make([]uint64, total)
	}
	if err := collectives.Gatherv(c, sorted, all, cnt, displs, 0); err != nil {
		return err
	}
	if c.Rank() != 0 {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, k := range all {
		w.WriteString(strconv.FormatUint(k, 10))
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
