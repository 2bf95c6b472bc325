package hpl

import (
	"math"
	"runtime/debug"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/linalg"
)

// maxProcessBytes bounds what one process can map whatever the machine: 2^47 bytes (128 TiB)
// is the user address space of x86-64 and arm64 with 48-bit virtual addresses. A need above
// it is too large even where the memory available is unknown.
const maxProcessBytes = 1 << 47

// leadingDim is netlib's leading dimension for mp local rows: a multiple of align, at least
// mp, not a power of two (it keeps columns off the same cache sets). ok is false when it
// does not fit in an int.
func leadingDim(mp, align int) (ld int, ok bool) {
	align = max(align, 1)
	ld = ((max(1, mp) - 1) / align) * align
	for {
		if ld > math.MaxInt-align {
			return 0, false
		}
		ld += align
		if ld&(ld-1) != 0 || ld == 1 {
			return ld, true
		}
	}
}

// testNeed is the memory, in bytes, that process (myrow, mycol) of a P x Q grid needs for a
// test of order n with blocks of nb: its part of [A | b] and x (NewMatrix), the solver's
// workspace as newSolver readies it (the look-ahead window's panels in whichever layout the
// ranks agree on, the factorization's workspace, U's buffer and the row-exchange scratch on
// grids with several process rows, the diagonal block, the panels' pivots), linalg's
// packing buffers (Reserve), one panel held by the transport while in flight, and the back
// substitution's and the residual check's vectors. It is computed in float64 so that no size
// from HPL.dat can overflow it; +Inf when the leading dimension does not fit in an int.
func testNeed(n, nb, P, Q, myrow, mycol int, algo Algo) float64 {
	const f64 = 8
	if n <= 0 {
		return float64(linalg.ReservedBytes())
	}
	nb = max(nb, 1)
	mp := numroc(n, nb, myrow, P)
	nq := numroc(n, nb, mycol, Q)
	ld, ok := leadingDim(mp, algo.Align)
	if !ok {
		return math.Inf(1)
	}
	fn, fmp, fnq := float64(n), float64(mp), float64(nq)
	fnqb := fnq + 1 // b's column, or scratch, on every process column
	matrix := float64(ld)*(fnq+1) + fnq

	jbi := min(nb, n)
	mloci := mp - numroc(jbi, nb, myrow, P)
	jb, mloc := float64(jbi), float64(mloci)
	nblk := math.Ceil(fn / float64(nb))
	slot := (jb + mloc) * jb // a panel column-major
	factorWs := 0.0
	if pl := linalg.PackedALen(mloci, jbi); pl >= 0 {
		// Packed panels (if every rank can pack): L1 and the packed L2 in each slot, and the
		// factoring process column's own column-major workspace.
		slot = max(slot, jb*jb+float64(pl))
		factorWs = (jb + mloc) * jb
	}
	slots := math.Min(float64(max(algo.Depth, 0)), nblk) + 1
	solver := slots*(slot+jb) + factorWs + jb*jb + 2*(2+jb)
	if P > 1 {
		solver += 2 * (2 * jb * fnqb) // U's buffer and the row-exchange scratch
	}
	solver += slot + jb           // a panel in flight
	solver += 3*nblk + fn         // the panels' descriptors and pivots
	check := 4*fmp + 2*fnq + 2*jb // residual and back substitution
	return f64*(matrix+solver+check) + float64(linalg.ReservedBytes())
}

// availableMemory reports the memory this process can still have, in bytes, and whether
// that is known. It is a variable so that tests can set it.
var availableMemory = osAvailableMemory

// memoryVerdict says whether a test fits; when it does not, row and col are the grid
// coordinates of the first process (in grid rank order) whose host cannot hold what the
// grid's processes there need, need is that sum and has what the host has, in bytes.
type memoryVerdict struct {
	fits      bool
	row, col  int
	need, has float64
}

// checkMemory decides, collectively over the grid, whether every process can allocate what
// test (n, nb, algo) needs: each process's need is shared with every process of the grid,
// the needs of the processes on one host (equal comm.HostID) are summed and compared with
// the memory available there (availableMemory: the cgroup's and the machine's), and the
// verdict is the same on every process (a process that skipped alone would leave the others
// waiting in the solve).
func checkMemory(g *Grid, n, nb int, algo Algo) (memoryVerdict, error) {
	all := g.All
	size, me := all.Size(), all.Rank()
	needs := make([]float64, size)
	needs[me] = testNeed(n, nb, g.P, g.Q, g.MyRow, g.MyCol, algo)
	if err := collectives.Allreduce(all, nil, needs, sumOp); err != nil {
		return memoryVerdict{}, err
	}
	host := all.HostID(me)
	onHost := 0.0
	for r, v := range needs {
		if all.HostID(r) == host {
			onHost += v
		}
	}
	has, known := availableMemory()
	if known && onHost > float64(has) {
		// Memory that earlier tests freed may still be held by the runtime: returned to
		// the system, it counts as available.
		debug.FreeOSMemory()
		has, known = availableMemory()
	}
	tooLarge := needs[me] > maxProcessBytes || (known && onHost > float64(has))
	// The first failing rank r is reported as size - r, the largest.
	v := []float64{0, 0, 0}
	if tooLarge {
		v[0], v[1], v[2] = float64(size-me), onHost, float64(has)
	}
	if err := collectives.Allreduce(all, nil, v, firstFailureOp); err != nil {
		return memoryVerdict{}, err
	}
	if v[0] == 0 {
		return memoryVerdict{fits: true}, nil
	}
	r := size - int(v[0])
	mv := memoryVerdict{need: v[1], has: v[2]}
	if g.Order == RowMajor {
		mv.row, mv.col = r/g.Q, r%g.Q
	} else {
		mv.row, mv.col = r%g.P, r/g.P
	}
	return mv, nil
}

// firstFailure keeps the entry whose first element is larger.
func firstFailure(acc, in []float64) {
	if in[0] > acc[0] {
		copy(acc, in)
	}
}
