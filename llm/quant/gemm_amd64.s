//go:build amd64 && !noasm

#include "textflag.h"

// Prefill kernel on packed weights (see pack8 in gemm_amd64.go): eight rows at a time, their
// block quants interleaved in 4-byte groups so that one VPDPBUSD multiplies four quants of all
// eight rows by the same four activation quants (broadcast), leaving each row's sum in its own
// lane: no horizontal additions, and every packed byte serves two activation vectors per load.
// Weights are unsigned (Q4_0 nibbles; Q8_0 quants + 128), so each block's integer sum starts
// from the activation's correction, Vec.Q8Neg8 (-8*sum(x)) shifted left by `shift` (0 for
// Q4_0, 4 for Q8_0: -128*sum(x)). Per block and row: acc += float(total) * (d_w*d_x), blocks in
// order: the same float operations as the Q4_0 row kernel (and llama.cpp's repacked gemm).

// func gemmQ0x8VNNI(pack *byte, nb, shift int, vecs *vecRef, nvec, off int)
TEXT ·gemmQ0x8VNNI(SB), NOSPLIT, $0-48
	MOVQ pack+0(FP), R8
	MOVQ nb+8(FP), CX
	MOVQ shift+16(FP), AX
	MOVQ AX, X15
	MOVQ vecs+24(FP), DX
	MOVQ nvec+32(FP), R9
	TESTQ R9, R9
	JZ done
	TESTQ CX, CX
	JZ done

pairs:
	// A = DX, B = the next vector (A again when A is the last)
	MOVQ DX, DI
	CMPQ R9, $1
	JEQ one
	ADDQ $32, DI
one:
	MOVQ 0(DX), R10
	MOVQ 8(DX), R11
	MOVQ 16(DX), R12
	MOVQ 0(DI), R13
	MOVQ 8(DI), R14
	MOVQ 16(DI), R15
	MOVQ R8, SI
	MOVQ CX, BX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1

block:
	VPBROADCASTD (R12), Y2
	VPSLLD X15, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPBROADCASTD (R15), Y4
	VPSLLD X15, Y4, Y4
	VPXOR Y5, Y5, Y5
	VMOVDQU 32(SI), Y6
	VPBROADCASTD 2(R10), Y7
	VPBROADCASTD 2(R13), Y8
	VPDPBUSD Y7, Y6, Y2
	VPDPBUSD Y8, Y6, Y4
	VMOVDQU 64(SI), Y6
	VPBROADCASTD 6(R10), Y7
	VPBROADCASTD 6(R13), Y8
	VPDPBUSD Y7, Y6, Y3
	VPDPBUSD Y8, Y6, Y5
	VMOVDQU 96(SI), Y6
	VPBROADCASTD 10(R10), Y7
	VPBROADCASTD 10(R13), Y8
	VPDPBUSD Y7, Y6, Y2
	VPDPBUSD Y8, Y6, Y4
	VMOVDQU 128(SI), Y6
	VPBROADCASTD 14(R10), Y7
	VPBROADCASTD 14(R13), Y8
	VPDPBUSD Y7, Y6, Y3
	VPDPBUSD Y8, Y6, Y5
	VMOVDQU 160(SI), Y6
	VPBROADCASTD 18(R10), Y7
	VPBROADCASTD 18(R13), Y8
	VPDPBUSD Y7, Y6, Y2
	VPDPBUSD Y8, Y6, Y4
	VMOVDQU 192(SI), Y6
	VPBROADCASTD 22(R10), Y7
	VPBROADCASTD 22(R13), Y8
	VPDPBUSD Y7, Y6, Y3
	VPDPBUSD Y8, Y6, Y5
	VMOVDQU 224(SI), Y6
	VPBROADCASTD 26(R10), Y7
	VPBROADCASTD 26(R13), Y8
	VPDPBUSD Y7, Y6, Y2
	VPDPBUSD Y8, Y6, Y4
	VMOVDQU 256(SI), Y6
	VPBROADCASTD 30(R10), Y7
	VPBROADCASTD 30(R13), Y8
	VPDPBUSD Y7, Y6, Y3
	VPDPBUSD Y8, Y6, Y5
	VPADDD Y3, Y2, Y2
	VPADDD Y5, Y4, Y4
	VCVTDQ2PS Y2, Y2
	VCVTDQ2PS Y4, Y4
	VMOVUPS (SI), Y9
	VBROADCASTSS (R11), Y10
	VMULPS Y10, Y9, Y10
	VBROADCASTSS (R14), Y11
	VMULPS Y11, Y9, Y11
	VFMADD231PS Y2, Y10, Y0
	VFMADD231PS Y4, Y11, Y1
	ADDQ $288, SI
	ADDQ $34, R10
	ADDQ $34, R13
	ADDQ $4, R11
	ADDQ $4, R12
	ADDQ $4, R14
	ADDQ $4, R15
	DECQ BX
	JNZ block

	MOVQ off+40(FP), AX
	MOVQ 24(DX), R10
	VMOVUPS Y0, (R10)(AX*1)
	MOVQ 24(DI), R10
	VMOVUPS Y1, (R10)(AX*1)
	ADDQ $64, DX
	SUBQ $2, R9
	JG pairs

done:
	VZEROUPPER
	RET
