//go:build !noasm

#include "textflag.h"

// func packA8AVX(n int, src, dst *float64, stride int)
// Copies n blocks of 8 doubles from src (contiguous) to dst, dst+stride, dst+2*stride, ...
// (stride in elements): one column of A into n micro-panels.
TEXT ·packA8AVX(SB), NOSPLIT, $0-32
	MOVQ n+0(FP), CX
	MOVQ src+8(FP), SI
	MOVQ dst+16(FP), DI
	MOVQ stride+24(FP), DX
	SHLQ $3, DX
	TESTQ CX, CX
	JLE done
loop:
	VMOVUPD (SI), Y0
	VMOVUPD 32(SI), Y1
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	ADDQ $64, SI
	ADDQ DX, DI
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET

// func packB6AVX(k4 int, b *float64, ldb int, d *float64)
// Packs rows [0, 4*k4) of six columns of B (column-major, ldb in elements) into d, row by
// row (d[l*6+x] = b[l+x*ldb]), four rows at a time: each column's four values are loaded
// at once and transposed in registers.
TEXT ·packB6AVX(SB), NOSPLIT, $0-32
	MOVQ k4+0(FP), CX
	MOVQ b+8(FP), SI
	MOVQ ldb+16(FP), DX
	MOVQ d+24(FP), DI
	SHLQ $3, DX
	LEAQ (SI)(DX*2), R8 // column 2
	LEAQ (R8)(DX*2), R9 // column 4
	TESTQ CX, CX
	JLE bdone
bloop:
	VMOVUPD (SI), Y0
	VMOVUPD (SI)(DX*1), Y1
	VMOVUPD (R8), Y2
	VMOVUPD (R8)(DX*1), Y3
	VMOVUPD (R9), Y4
	VMOVUPD (R9)(DX*1), Y5
	VUNPCKLPD Y1, Y0, Y6 // c0[0] c1[0] c0[2] c1[2]
	VUNPCKHPD Y1, Y0, Y7 // c0[1] c1[1] c0[3] c1[3]
	VUNPCKLPD Y3, Y2, Y8 // c2[0] c3[0] c2[2] c3[2]
	VUNPCKHPD Y3, Y2, Y9 // c2[1] c3[1] c2[3] c3[3]
	VUNPCKLPD Y5, Y4, Y10 // c4[0] c5[0] c4[2] c5[2]
	VUNPCKHPD Y5, Y4, Y11 // c4[1] c5[1] c4[3] c5[3]
	VPERM2F128 $0x20, Y8, Y6, Y0 // row 0, columns 0-3
	VPERM2F128 $0x20, Y9, Y7, Y1 // row 1
	VPERM2F128 $0x31, Y8, Y6, Y2 // row 2
	VPERM2F128 $0x31, Y9, Y7, Y3 // row 3
	VMOVUPD Y0, 0(DI)
	VMOVUPD X10, 32(DI)
	VMOVUPD Y1, 48(DI)
	VMOVUPD X11, 80(DI)
	VMOVUPD Y2, 96(DI)
	VEXTRACTF128 $1, Y10, 128(DI)
	VMOVUPD Y3, 144(DI)
	VEXTRACTF128 $1, Y11, 176(DI)
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ $192, DI
	DECQ CX
	JNZ bloop
bdone:
	VZEROUPPER
	RET

// func packA24AVX512(n int, src, dst *float64, stride int)
// packA8AVX for the AVX-512 kernel's 24-row micro-panels: n blocks of 24 doubles.
TEXT ·packA24AVX512(SB), NOSPLIT, $0-32
	MOVQ n+0(FP), CX
	MOVQ src+8(FP), SI
	MOVQ dst+16(FP), DI
	MOVQ stride+24(FP), DX
	SHLQ $3, DX
	TESTQ CX, CX
	JLE done24
loop24:
	VMOVUPD (SI), Z0
	VMOVUPD 64(SI), Z1
	VMOVUPD 128(SI), Z2
	VMOVUPD Z0, (DI)
	VMOVUPD Z1, 64(DI)
	VMOVUPD Z2, 128(DI)
	ADDQ $192, SI
	ADDQ DX, DI
	DECQ CX
	JNZ loop24
done24:
	VZEROUPPER
	RET
