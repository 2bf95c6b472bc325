package hpl

// HPL's matrix generator: a 64-bit linear congruential sequence X(k+1) = a*X(k) + c mod 2^64
// with netlib's constants (HPL_MULT0/1, HPL_IADD0/1), mapped to (-0.5, 0.5] by HPL_rand. Entry
// (i, j) of an M-row matrix is the number X(1 + i + j*M) of the sequence started at X(0) =
// seed, whatever the grid, so a matrix here is bit for bit netlib's for the same N and seed.
// Netlib encodes the 64-bit integers as pairs of 32-bit halves multiplied 16 bits at a time;
// both are arithmetic modulo 2^64, which uint64 does natively.

const (
	randMult uint64 = 1481765933<<32 | 1284865837 // HPL_MULT1:HPL_MULT0
	randAdd  uint64 = 1                           // HPL_IADD1:HPL_IADD0
	// Seed is the seed netlib's HPL_pdtest uses for every test (HPL_ISEED).
	Seed = 100
)

// lcg is the affine map x -> a*x + c (mod 2^64): a jump over some numbers of the sequence.
type lcg struct{ a, c uint64 }

func (l lcg) apply(x uint64) uint64 { return l.a*x + l.c }

// then composes l followed by m.
func (l lcg) then(m lcg) lcg { return lcg{a: m.a * l.a, c: m.a*l.c + m.c} }

// jumpBy returns the map that advances the sequence by k numbers (netlib's HPL_xjumpm),
// by binary powering instead of k multiplications.
func jumpBy(k int) lcg {
	r := lcg{a: 1, c: 0}
	step := lcg{a: randMult, c: randAdd}
	for k > 0 {
		if k&1 == 1 {
			r = r.then(step)
		}
		step = step.then(step)
		k >>= 1
	}
	return r
}

// randValue maps a state to HPL_rand's number, with netlib's exact floating-point steps:
// 0.5 - X / 2^64, with the 64-bit X added up from its low 32 bits and two 16-bit pieces of
// its high half, in netlib's order, so that the rounding is the same.
func randValue(x uint64) float64 {
	const divfac = 2147483648.0
	t := float64(uint32(x)) / divfac * 0.5
	t += float64((x >> 32) & 65535)
	t += float64(x>>48) * 65536.0
	return 0.5 - t/divfac*0.5
}

// numroc is the number of rows (or columns) of an n-long dimension, distributed in blocks of
// nb over nprocs processes starting at process 0, that process iproc owns.
func numroc(n, nb, iproc, nprocs int) int {
	nblocks := n / nb
	r := (nblocks / nprocs) * nb
	extra := nblocks % nprocs
	switch {
	case iproc < extra:
		r += nb
	case iproc == extra:
		r += n % nb
	}
	return r
}

// l2g maps a local index to its global index (block-cyclic, nb, process iproc of nprocs).
func l2g(il, nb, iproc, nprocs int) int {
	return (il/nb)*nb*nprocs + iproc*nb + il%nb
}

// g2l maps a global index owned by its process to the local index there.
func g2l(ig, nb, nprocs int) int { return (ig/(nb*nprocs))*nb + ig%nb }

// g2p is the process that owns global index ig.
func g2p(ig, nb, nprocs int) int { return (ig / nb) % nprocs }

// MatGen fills the local part, owned by process (myrow, mycol) of an nprow x npcol grid, of
// the m x n matrix HPL generates from seed (netlib's HPL_pdmatgen): a is column-major with
// leading dimension lda, its rows and columns those of the block-cyclic distribution with
// square nb x nb blocks.
func MatGen(m, n, nb, nprow, npcol, myrow, mycol int, a []float64, lda int, seed int) {
	mp := numroc(m, nb, myrow, nprow)
	nq := numroc(n, nb, mycol, npcol)
	if mp <= 0 || nq <= 0 {
		return
	}
	// Between two local row blocks the sequence skips the other process rows' blocks.
	skip := jumpBy((nprow - 1) * nb)
	x0 := uint64(uint32(int32(seed))) // netlib: low half = ISEED, high half = 0
	for jl := range nq {
		gj := l2g(jl, nb, mycol, npcol)
		x := jumpBy(1 + myrow*nb + gj*m).apply(x0)
		col := a[jl*lda : jl*lda+mp]
		for il := 0; il < mp; {
			ib := min(nb, mp-il)
			for k := range ib {
				col[il+k] = randValue(x)
				x = x*randMult + randAdd
			}
			il += ib
			x = skip.apply(x)
		}
	}
}
