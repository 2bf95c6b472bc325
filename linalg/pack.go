package linalg

// packA packs the mc×kc block of op(A) starting at row ic, column pc
// of op(A) into micro-panels of mr rows: panel p holds, for each l in
// [0, kc), the mr elements op(A)[ic+p*mr+r, pc+l] (r < mr) consecutively.
// Rows past mc are zero so that edge tiles can use the full kernel.
func packA(trans bool, mr, mc, kc int, a []float64, lda, ic, pc int, dst []float64) {
	if !trans {
		packANoTrans(mr, mc, kc, a, lda, ic, pc, dst)
		return
	}
	for p := 0; p*mr < mc; p++ {
		i0 := ic + p*mr
		rows := min(mr, mc-p*mr)
		d := dst[p*mr*kc : (p+1)*mr*kc]
		// op(A)[i, l] = a[l + i*lda]: row r of the panel is contiguous in a.
		for r := range rows {
			src := a[pc+(i0+r)*lda : pc+(i0+r)*lda+kc]
			for l, v := range src {
				d[l*mr+r] = v
			}
		}
		if rows < mr {
			for l := range kc {
				clear(d[l*mr+rows : l*mr+mr])
			}
		}
	}
}

// packB packs micro-panels [plo, phi) of the kc×nc block of op(B) starting
// at row pc, column jc of op(B): panel p holds, for each l in [0, kc), the nr
// elements op(B)[pc+l, jc+p*nr+x] (x < nr) consecutively. Columns past nc
// are zero.
func packB(trans bool, nr, kc, nc int, b []float64, ldb, pc, jc, plo, phi int, dst []float64) {
	for p := plo; p < phi; p++ {
		j0 := jc + p*nr
		cols := min(nr, nc-p*nr)
		d := dst[p*nr*kc : (p+1)*nr*kc]
		if trans {
			// op(B)[l, j] = b[j + l*ldb]: nr contiguous elements per l.
			for l := range kc {
				src := b[j0+(pc+l)*ldb : j0+(pc+l)*ldb+cols]
				dd := d[l*nr : l*nr+nr]
				copy(dd, src)
				clear(dd[cols:])
			}
			continue
		}
		// op(B)[l, j] = b[l + j*ldb]: column x of the panel is contiguous.
		if cols == nr && nr == 8 {
			packB8(kc, b[pc+j0*ldb:], ldb, d)
			continue
		}
		if cols == nr && nr == 6 && packB6 != nil {
			// The assembly reads four rows of each column at once; the rest row by row.
			src := b[pc+j0*ldb : pc+(j0+5)*ldb+kc] // bounds check for the assembly's reads
			k4 := kc / 4
			if k4 > 0 {
				packB6(k4, &src[0], ldb, &d[0])
			}
			for l := k4 * 4; l < kc; l++ {
				for x := range 6 {
					d[l*6+x] = src[l+x*ldb]
				}
			}
			continue
		}
		for x := range cols {
			src := b[pc+(j0+x)*ldb : pc+(j0+x)*ldb+kc]
			for l, v := range src {
				d[l*nr+x] = v
			}
		}
		if cols < nr {
			for l := range kc {
				clear(d[l*nr+cols : l*nr+nr])
			}
		}
	}
}

// packB8 packs 8 columns of B (kc rows each) reading the 8 columns side by
// side so that the destination is written sequentially.
func packB8(kc int, b []float64, ldb int, d []float64) {
	c0 := b[0*ldb : 0*ldb+kc]
	c1 := b[1*ldb : 1*ldb+kc]
	c2 := b[2*ldb : 2*ldb+kc]
	c3 := b[3*ldb : 3*ldb+kc]
	c4 := b[4*ldb : 4*ldb+kc]
	c5 := b[5*ldb : 5*ldb+kc]
	c6 := b[6*ldb : 6*ldb+kc]
	c7 := b[7*ldb : 7*ldb+kc]
	d = d[:8*kc]
	for l := range kc {
		dd := d[l*8 : l*8+8 : l*8+8]
		dd[0], dd[1], dd[2], dd[3] = c0[l], c1[l], c2[l], c3[l]
		dd[4], dd[5], dd[6], dd[7] = c4[l], c5[l], c6[l], c7[l]
	}
}

// Assembly packing routines, where the CPU has them (nil otherwise): packA8 copies one
// column's n blocks of 8 elements into n micro-panels stride elements apart; packB6 packs
// rows [0, 4*k4) of six columns of B, row by row.
var (
	packA8  func(n int, src, dst *float64, stride int)
	packA24 func(n int, src, dst *float64, stride int)
	packB6  func(k4 int, b *float64, ldb int, d *float64)
)

// packABlocks is the assembly routine that copies blocks of mr elements, nil if none.
func packABlocks(mr int) func(n int, src, dst *float64, stride int) {
	switch mr {
	case 8:
		return packA8
	case 24:
		return packA24
	}
	return nil
}

// packANoTrans is packA for a non-transposed A. It reads A in memory order,
// down each column of the block, and scatters each column's mc elements to
// the micro-panels: reading panel by panel instead would visit kc columns
// for every mr rows, a stride the hardware prefetchers follow poorly when A
// is not in cache (HPL's L panel, thousands of rows).
func packANoTrans(mr, mc, kc int, a []float64, lda, ic, pc int, dst []float64) {
	full := mc / mr
	rows := mc - full*mr // of the last, partial panel
	asm := packABlocks(mr)
	for l := range kc {
		src := a[ic+(pc+l)*lda : ic+(pc+l)*lda+mc]
		if asm != nil && full > 0 {
			_ = dst[(full-1)*mr*kc+l*mr+mr-1] // bounds check for the assembly's last block
			asm(full, &src[0], &dst[l*mr], mr*kc)
		} else {
			switch mr {
			case 8:
				// Element by element: the compiler turns an [8]float64 block
				// assignment or a copy of 8 into a call to memmove.
				for p := range full {
					s := src[p*8 : p*8+8 : p*8+8]
					d := dst[p*8*kc+l*8 : p*8*kc+l*8+8 : p*8*kc+l*8+8]
					d[0], d[1], d[2], d[3] = s[0], s[1], s[2], s[3]
					d[4], d[5], d[6], d[7] = s[4], s[5], s[6], s[7]
				}
			default:
				for p := range full {
					s := src[p*mr : p*mr+mr]
					d := dst[p*mr*kc+l*mr : p*mr*kc+l*mr+mr]
					for i := range d {
						d[i] = s[i]
					}
				}
			}
		}
		if rows > 0 {
			d := dst[full*mr*kc+l*mr : full*mr*kc+l*mr+mr]
			copy(d, src[full*mr:])
			clear(d[rows:])
		}
	}
}
