//go:build amd64 && !noasm

#include "textflag.h"

// Block dot products with AVX2 + FMA + F16C. Each block's integer dot product is exact
// (VPMADDUBSW on |w| and x*sign(w) cannot saturate: |w| <= 128, |x| <= 127), converted to
// float and accumulated as d_w*d_x*sum with FMA in 8 lanes, like llama.cpp's AVX2 kernels.

#define HSUM(Y, X, T) \
	VEXTRACTF128 $1, Y, T \
	VADDPS T, X, X \
	VMOVHLPS X, X, T \
	VADDPS T, X, X \
	VMOVSHDUP X, T \
	VADDSS T, X, X

// func dotQ8_0AVX2(w, x *byte, nb int) float32
// One accumulator of 8 lanes and ggml's hsum_float_8 at the end: the same order of float
// operations as llama.cpp's AVX2 ggml_vec_dot_q8_0_q8_0, so results match it bit for bit.
TEXT ·dotQ8_0AVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ nb+16(FP), CX
	VXORPS Y0, Y0, Y0
	VPCMPEQW Y7, Y7, Y7
	VPSRLW $15, Y7, Y7          // int16 ones
	TESTQ CX, CX
	JZ q8done

q8loop:
	VPBROADCASTW (SI), X1
	VCVTPH2PS X1, Y1
	VPBROADCASTW (DI), X2
	VCVTPH2PS X2, Y2
	VMULPS Y2, Y1, Y1           // d = d_w * d_x in every lane
	VMOVDQU 2(SI), Y2
	VMOVDQU 2(DI), Y3
	VPSIGNB Y2, Y2, Y4          // |w|
	VPSIGNB Y2, Y3, Y5          // x * sign(w)
	VPMADDUBSW Y5, Y4, Y6       // pairs -> int16
	VPMADDWD Y7, Y6, Y6         // -> int32
	VCVTDQ2PS Y6, Y6
	VFMADD231PS Y6, Y1, Y0
	ADDQ $34, SI
	ADDQ $34, DI
	DECQ CX
	JNZ q8loop

q8done:
	HSUM(Y0, X0, X1)
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotQ4_0AVX2(w, x *byte, nb int) float32
// w: Q4_0 blocks (18 bytes: f16 d, 16 bytes of nibbles: low = elements 0..15, high = 16..31);
// x: Q8_0 blocks (34 bytes).
TEXT ·dotQ4_0AVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ nb+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y10, Y10, Y10
	VPCMPEQW Y7, Y7, Y7
	VPSRLW $15, Y7, Y7          // int16 ones
	MOVL $0x0f0f0f0f, AX
	MOVQ AX, X8
	VPBROADCASTD X8, Y8         // 0x0f bytes
	MOVL $0x08080808, AX
	MOVQ AX, X9
	VPBROADCASTD X9, Y9         // 8s
	CMPQ CX, $2
	JLT q4tail

q4loop2:
	VPBROADCASTW (SI), X1
	VCVTPH2PS X1, Y1
	VPBROADCASTW (DI), X2
	VCVTPH2PS X2, Y2
	VMULPS Y2, Y1, Y1
	VMOVDQU 2(SI), X2           // 16 bytes of nibbles
	VPSRLW $4, X2, X3
	VINSERTI128 $1, X3, Y2, Y2  // low lane: bytes, high lane: bytes >> 4
	VPAND Y8, Y2, Y2            // nibbles 0..15 in element order
	VPSUBB Y9, Y2, Y2           // -8..7
	VMOVDQU 2(DI), Y3
	VPSIGNB Y2, Y2, Y4
	VPSIGNB Y2, Y3, Y5
	VPMADDUBSW Y5, Y4, Y6
	VPMADDWD Y7, Y6, Y6
	VCVTDQ2PS Y6, Y6
	VFMADD231PS Y6, Y1, Y0

	VPBROADCASTW 18(SI), X11
	VCVTPH2PS X11, Y11
	VPBROADCASTW 34(DI), X12
	VCVTPH2PS X12, Y12
	VMULPS Y12, Y11, Y11
	VMOVDQU 20(SI), X12
	VPSRLW $4, X12, X13
	VINSERTI128 $1, X13, Y12, Y12
	VPAND Y8, Y12, Y12
	VPSUBB Y9, Y12, Y12
	VMOVDQU 36(DI), Y13
	VPSIGNB Y12, Y12, Y14
	VPSIGNB Y12, Y13, Y15
	VPMADDUBSW Y15, Y14, Y6
	VPMADDWD Y7, Y6, Y6
	VCVTDQ2PS Y6, Y6
	VFMADD231PS Y6, Y11, Y10

	ADDQ $36, SI
	ADDQ $68, DI
	SUBQ $2, CX
	CMPQ CX, $2
	JGE q4loop2

q4tail:
	TESTQ CX, CX
	JZ q4done
	VPBROADCASTW (SI), X1
	VCVTPH2PS X1, Y1
	VPBROADCASTW (DI), X2
	VCVTPH2PS X2, Y2
	VMULPS Y2, Y1, Y1
	VMOVDQU 2(SI), X2
	VPSRLW $4, X2, X3
	VINSERTI128 $1, X3, Y2, Y2
	VPAND Y8, Y2, Y2
	VPSUBB Y9, Y2, Y2
	VMOVDQU 2(DI), Y3
	VPSIGNB Y2, Y2, Y4
	VPSIGNB Y2, Y3, Y5
	VPMADDUBSW Y5, Y4, Y6
	VPMADDWD Y7, Y6, Y6
	VCVTDQ2PS Y6, Y6
	VFMADD231PS Y6, Y1, Y0

q4done:
	VADDPS Y10, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotF32AVX2(w *byte, x *float32, n int) float32   (n multiple of 32)
TEXT ·dotF32AVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	SHRQ $5, CX
	JZ f32done

f32loop:
	VMOVUPS (SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ f32loop

f32done:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotF16AVX2(w, x *byte, n int) float32   (both F16; n multiple of 16)
TEXT ·dotF16AVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	SHRQ $4, CX
	JZ f16done

f16loop:
	VCVTPH2PS (SI), Y4
	VCVTPH2PS 16(SI), Y5
	VCVTPH2PS (DI), Y6
	VCVTPH2PS 16(DI), Y7
	VFMADD231PS Y6, Y4, Y0
	VFMADD231PS Y7, Y5, Y1
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ f16loop

f16done:
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func axpyF16AVX2(out *float32, a float32, v *byte, n int)   out[i] += a*half(v[i]); n multiple of 8
TEXT ·axpyF16AVX2(SB), NOSPLIT, $0-32
	MOVQ out+0(FP), DI
	VBROADCASTSS a+8(FP), Y0
	MOVQ v+16(FP), SI
	MOVQ n+24(FP), CX
	SHRQ $3, CX
	JZ axdone

axloop:
	VCVTPH2PS (SI), Y1
	VMOVUPS (DI), Y2
	VFMADD231PS Y1, Y0, Y2
	VMOVUPS Y2, (DI)
	ADDQ $16, SI
	ADDQ $32, DI
	DECQ CX
	JNZ axloop

axdone:
	VZEROUPPER
	RET

// func dotQ8_0x4AVX2(w *byte, stride int, x *byte, nb int, out *float32)
// Four consecutive rows (stride bytes apart) against one Q8_0 vector: each activation block
// and its scale are loaded once for the four rows.
TEXT ·dotQ8_0x4AVX2(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ stride+8(FP), AX
	MOVQ x+16(FP), DI
	MOVQ nb+24(FP), CX
	MOVQ out+32(FP), DX
	LEAQ (SI)(AX*1), R9
	LEAQ (R9)(AX*1), R10
	LEAQ (R10)(AX*1), R11
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VPCMPEQW Y7, Y7, Y7
	VPSRLW $15, Y7, Y7
	TESTQ CX, CX
	JZ q8x4done

q8x4loop:
	VMOVDQU 2(DI), Y10
	VPBROADCASTW (DI), X11
	VCVTPH2PS X11, Y11

#define Q8ROW(R, ACC) \
	VPBROADCASTW (R), X12 \
	VCVTPH2PS X12, Y12 \
	VMULPS Y11, Y12, Y12 \
	VMOVDQU 2(R), Y13 \
	VPSIGNB Y13, Y13, Y14 \
	VPSIGNB Y13, Y10, Y15 \
	VPMADDUBSW Y15, Y14, Y14 \
	VPMADDWD Y7, Y14, Y14 \
	VCVTDQ2PS Y14, Y14 \
	VFMADD231PS Y14, Y12, ACC

	Q8ROW(SI, Y0)
	Q8ROW(R9, Y1)
	Q8ROW(R10, Y2)
	Q8ROW(R11, Y3)
	ADDQ $34, SI
	ADDQ $34, R9
	ADDQ $34, R10
	ADDQ $34, R11
	ADDQ $34, DI
	DECQ CX
	JNZ q8x4loop

q8x4done:
	HSUM(Y0, X0, X12)
	HSUM(Y1, X1, X12)
	HSUM(Y2, X2, X12)
	HSUM(Y3, X3, X12)
	VMOVSS X0, (DX)
	VMOVSS X1, 4(DX)
	VMOVSS X2, 8(DX)
	VMOVSS X3, 12(DX)
	VZEROUPPER
	RET

// func dotQ4_0x4AVX2(w *byte, stride int, x *byte, xsum8 *int32, nb int, out *float32)
// Four Q4_0 rows against one Q8_0 vector. VPMADDUBSW takes the nibbles (0..15) as the unsigned
// operand, so each row's block total is sum(q*x), exact in integers, from which 8*sum(x)
// (xsum8, computed once per vector) is subtracted for the four rows at once. Each total is
// added with one FMA per block: the order of llama.cpp's AVX2 kernels for its repacked Q4_0.
TEXT ·dotQ4_0x4AVX2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ stride+8(FP), AX
	MOVQ x+16(FP), DI
	MOVQ xsum8+24(FP), R8
	MOVQ nb+32(FP), CX
	MOVQ out+40(FP), DX
	LEAQ (SI)(AX*1), R9
	LEAQ (R9)(AX*1), R10
	LEAQ (R10)(AX*1), R11
	VXORPS X15, X15, X15
	VPCMPEQW Y7, Y7, Y7
	VPSRLW $15, Y7, Y7
	MOVL $0x0f0f0f0f, AX
	MOVQ AX, X8
	VPBROADCASTD X8, Y8
	TESTQ CX, CX
	JZ q4x4done

q4x4loop:
	VMOVDQU 2(DI), Y10
	VPBROADCASTW (DI), X11
	VCVTPH2PS X11, X11         // d_x in 4 lanes
	VPBROADCASTD (R8), X9      // 8*sum(x) of this block

#define Q4ROW(R, ISUM) \
	VMOVDQU 2(R), X13 \
	VPSRLW $4, X13, X14 \
	VINSERTI128 $1, X14, Y13, Y13 \
	VPAND Y8, Y13, Y13 \
	VPMADDUBSW Y10, Y13, Y14 \
	VPMADDWD Y7, Y14, ISUM

	Q4ROW(SI, Y0)
	Q4ROW(R9, Y1)
	Q4ROW(R10, Y2)
	Q4ROW(R11, Y3)
	VPHADDD Y1, Y0, Y0
	VPHADDD Y3, Y2, Y2
	VPHADDD Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0          // the four rows' sum(q*x)
	VPSUBD X9, X0, X0          // sum((q-8)*x)
	VCVTDQ2PS X0, X0
	VPXOR X12, X12, X12        // breaks the dependency on the previous block's X12
	VPINSRW $0, (SI), X12, X12
	VPINSRW $1, (R9), X12, X12
	VPINSRW $2, (R10), X12, X12
	VPINSRW $3, (R11), X12, X12
	VCVTPH2PS X12, X12         // the four rows' d_w
	VMULPS X11, X12, X12
	VFMADD231PS X0, X12, X15
	ADDQ $18, SI
	ADDQ $18, R9
	ADDQ $18, R10
	ADDQ $18, R11
	ADDQ $34, DI
	ADDQ $4, R8
	DECQ CX
	JNZ q4x4loop

q4x4done:
	VMOVUPS X15, (DX)
	VZEROUPPER
	RET

// Two-vector variants for matrix-matrix products (prefill): four rows against two activation
// vectors, each weight block loaded (and unpacked) once for both. Block totals are exact
// integers; one FMA per block adds them, scaled, to the four rows of each vector.

#define TOTALS4(A, B, XA, XB, T) \
	VPHADDD B, A, A \
	VEXTRACTI128 $1, A, T \
	VPADDD T, XA, XA

// SCALES4 leaves the four rows' d_w (rows at SI, R9, R10, R11) in X12.
#define SCALES4 \
	VPXOR X12, X12, X12 \
	VPINSRW $0, (SI), X12, X12 \
	VPINSRW $1, (R9), X12, X12 \
	VPINSRW $2, (R10), X12, X12 \
	VPINSRW $3, (R11), X12, X12 \
	VCVTPH2PS X12, X12

// ACCUM(XP, XT, T, ACC): ACC += totals XT (int32) * d_w (X12) * d_x (half at XP)
#define ACCUM(XP, XT, T, ACC) \
	VCVTDQ2PS XT, XT \
	VPBROADCASTW (XP), T \
	VCVTPH2PS T, T \
	VMULPS T, X12, T \
	VFMADD231PS XT, T, ACC

// func dotQ8_0x4x2AVX2(w *byte, stride int, x0, x1 *byte, nb int, out0, out1 *float32)
TEXT ·dotQ8_0x4x2AVX2(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ stride+8(FP), AX
	MOVQ x0+16(FP), DI
	MOVQ x1+24(FP), BX
	MOVQ nb+32(FP), CX
	MOVQ out0+40(FP), DX
	MOVQ out1+48(FP), R13
	LEAQ (SI)(AX*1), R9
	LEAQ (R9)(AX*1), R10
	LEAQ (R10)(AX*1), R11
	VXORPS X15, X15, X15
	VXORPS X5, X5, X5
	VPCMPEQW Y7, Y7, Y7
	VPSRLW $15, Y7, Y7
	TESTQ CX, CX
	JZ q8x2done

q8x2loop:
	VMOVDQU 2(DI), Y10
	VMOVDQU 2(BX), Y11

#define Q8ROW2(R, A, B) \
	VMOVDQU 2(R), Y4 \
	VPSIGNB Y4, Y4, Y6 \
	VPSIGNB Y4, Y10, Y13 \
	VPMADDUBSW Y13, Y6, A \
	VPMADDWD Y7, A, A \
	VPSIGNB Y4, Y11, Y13 \
	VPMADDUBSW Y13, Y6, B \
	VPMADDWD Y7, B, B

	Q8ROW2(SI, Y0, Y1)
	Q8ROW2(R9, Y2, Y3)
	VPHADDD Y2, Y0, Y0
	VPHADDD Y3, Y1, Y1
	Q8ROW2(R10, Y2, Y3)
	Q8ROW2(R11, Y9, Y14)
	VPHADDD Y9, Y2, Y2
	VPHADDD Y14, Y3, Y3
	TOTALS4(Y0, Y2, X0, X2, X4)
	TOTALS4(Y1, Y3, X1, X3, X4)
	SCALES4
	ACCUM(DI, X0, X4, X15)
	ACCUM(BX, X1, X4, X5)
	ADDQ $34, SI
	ADDQ $34, R9
	ADDQ $34, R10
	ADDQ $34, R11
	ADDQ $34, DI
	ADDQ $34, BX
	DECQ CX
	JNZ q8x2loop

q8x2done:
	VMOVUPS X15, (DX)
	VMOVUPS X5, (R13)
	VZEROUPPER
	RET

// func dotQ4_0x4x2AVX2(w *byte, stride int, x0, x1 *byte, s0, s1 *int32, nb int, out0, out1 *float32)
TEXT ·dotQ4_0x4x2AVX2(SB), NOSPLIT, $0-72
	MOVQ w+0(FP), SI
	MOVQ stride+8(FP), AX
	MOVQ x0+16(FP), DI
	MOVQ x1+24(FP), BX
	MOVQ s0+32(FP), R8
	MOVQ s1+40(FP), R12
	MOVQ nb+48(FP), CX
	MOVQ out0+56(FP), DX
	MOVQ out1+64(FP), R13
	LEAQ (SI)(AX*1), R9
	LEAQ (R9)(AX*1), R10
	LEAQ (R10)(AX*1), R11
	VXORPS X15, X15, X15
	VXORPS X5, X5, X5
	VPCMPEQW Y7, Y7, Y7
	VPSRLW $15, Y7, Y7
	MOVL $0x0f0f0f0f, AX
	MOVQ AX, X8
	VPBROADCASTD X8, Y8
	TESTQ CX, CX
	JZ q4x2done

q4x2loop:
	VMOVDQU 2(DI), Y10
	VMOVDQU 2(BX), Y11

#define Q4ROW2(R, A, B) \
	VMOVDQU 2(R), X4 \
	VPSRLW $4, X4, X13 \
	VINSERTI128 $1, X13, Y4, Y4 \
	VPAND Y8, Y4, Y4 \
	VPMADDUBSW Y10, Y4, A \
	VPMADDWD Y7, A, A \
	VPMADDUBSW Y11, Y4, B \
	VPMADDWD Y7, B, B

	Q4ROW2(SI, Y0, Y1)
	Q4ROW2(R9, Y2, Y3)
	VPHADDD Y2, Y0, Y0
	VPHADDD Y3, Y1, Y1
	Q4ROW2(R10, Y2, Y3)
	Q4ROW2(R11, Y9, Y14)
	VPHADDD Y9, Y2, Y2
	VPHADDD Y14, Y3, Y3
	TOTALS4(Y0, Y2, X0, X2, X4)
	TOTALS4(Y1, Y3, X1, X3, X4)
	VPBROADCASTD (R8), X4
	VPSUBD X4, X0, X0
	VPBROADCASTD (R12), X4
	VPSUBD X4, X1, X1
	SCALES4
	ACCUM(DI, X0, X4, X15)
	ACCUM(BX, X1, X4, X5)
	ADDQ $18, SI
	ADDQ $18, R9
	ADDQ $18, R10
	ADDQ $18, R11
	ADDQ $34, DI
	ADDQ $34, BX
	ADDQ $4, R8
	ADDQ $4, R12
	DECQ CX
	JNZ q4x2loop

q4x2done:
	VMOVUPS X15, (DX)
	VMOVUPS X5, (R13)
	VZEROUPPER
	RET

// VNNI variants (AVX512-VNNI on 256-bit registers): VPDPBUSD does the u8 x s8 products and
// the four-way sums of VPMADDUBSW + VPMADDWD in one instruction, with the same exact totals.

// func dotQ8_0x4x2VNNI(w *byte, stride int, x0, x1 *byte, nb int, out0, out1 *float32)
TEXT ·dotQ8_0x4x2VNNI(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ stride+8(FP), AX
	MOVQ x0+16(FP), DI
	MOVQ x1+24(FP), BX
	MOVQ nb+32(FP), CX
	MOVQ out0+40(FP), DX
	MOVQ out1+48(FP), R13
	LEAQ (SI)(AX*1), R9
	LEAQ (R9)(AX*1), R10
	LEAQ (R10)(AX*1), R11
	VXORPS X15, X15, X15
	VXORPS X5, X5, X5
	VPCMPEQW Y7, Y7, Y7
	VPSRLW $15, Y7, Y7
	TESTQ CX, CX
	JZ q8v2done

q8v2loop:
	VMOVDQU 2(DI), Y10
	VMOVDQU 2(BX), Y11

#define Q8ROW2V(R, A, B) \
	VMOVDQU 2(R), Y4 \
	VPSIGNB Y4, Y4, Y6 \
	VPSIGNB Y4, Y10, Y13 \
	VPXOR A, A, A \
	VPDPBUSD Y13, Y6, A \
	VPSIGNB Y4, Y11, Y13 \
	VPXOR B, B, B \
	VPDPBUSD Y13, Y6, B

	Q8ROW2V(SI, Y0, Y1)
	Q8ROW2V(R9, Y2, Y3)
	VPHADDD Y2, Y0, Y0
	VPHADDD Y3, Y1, Y1
	Q8ROW2V(R10, Y2, Y3)
	Q8ROW2V(R11, Y9, Y14)
	VPHADDD Y9, Y2, Y2
	VPHADDD Y14, Y3, Y3
	TOTALS4(Y0, Y2, X0, X2, X4)
	TOTALS4(Y1, Y3, X1, X3, X4)
	SCALES4
	ACCUM(DI, X0, X4, X15)
	ACCUM(BX, X1, X4, X5)
	ADDQ $34, SI
	ADDQ $34, R9
	ADDQ $34, R10
	ADDQ $34, R11
	ADDQ $34, DI
	ADDQ $34, BX
	DECQ CX
	JNZ q8v2loop

q8v2done:
	VMOVUPS X15, (DX)
	VMOVUPS X5, (R13)
	VZEROUPPER
	RET

// func dotQ4_0x4x2VNNI(w *byte, stride int, x0, x1 *byte, s0, s1 *int32, nb int, out0, out1 *float32)
TEXT ·dotQ4_0x4x2VNNI(SB), NOSPLIT, $0-72
	MOVQ w+0(FP), SI
	MOVQ stride+8(FP), AX
	MOVQ x0+16(FP), DI
	MOVQ x1+24(FP), BX
	MOVQ s0+32(FP), R8
	MOVQ s1+40(FP), R12
	MOVQ nb+48(FP), CX
	MOVQ out0+56(FP), DX
	MOVQ out1+64(FP), R13
	LEAQ (SI)(AX*1), R9
	LEAQ (R9)(AX*1), R10
	LEAQ (R10)(AX*1), R11
	VXORPS X15, X15, X15
	VXORPS X5, X5, X5
	VPCMPEQW Y7, Y7, Y7
	VPSRLW $15, Y7, Y7
	MOVL $0x0f0f0f0f, AX
	MOVQ AX, X8
	VPBROADCASTD X8, Y8
	TESTQ CX, CX
	JZ q4v2done

q4v2loop:
	VMOVDQU 2(DI), Y10
	VMOVDQU 2(BX), Y11

#define Q4ROW2V(R, A, B) \
	VMOVDQU 2(R), X4 \
	VPSRLW $4, X4, X13 \
	VINSERTI128 $1, X13, Y4, Y4 \
	VPAND Y8, Y4, Y4 \
	VPXOR A, A, A \
	VPDPBUSD Y10, Y4, A \
	VPXOR B, B, B \
	VPDPBUSD Y11, Y4, B

	Q4ROW2V(SI, Y0, Y1)
	Q4ROW2V(R9, Y2, Y3)
	VPHADDD Y2, Y0, Y0
	VPHADDD Y3, Y1, Y1
	Q4ROW2V(R10, Y2, Y3)
	Q4ROW2V(R11, Y9, Y14)
	VPHADDD Y9, Y2, Y2
	VPHADDD Y14, Y3, Y3
	TOTALS4(Y0, Y2, X0, X2, X4)
	TOTALS4(Y1, Y3, X1, X3, X4)
	VPBROADCASTD (R8), X4
	VPSUBD X4, X0, X0
	VPBROADCASTD (R12), X4
	VPSUBD X4, X1, X1
	SCALES4
	ACCUM(DI, X0, X4, X15)
	ACCUM(BX, X1, X4, X5)
	ADDQ $18, SI
	ADDQ $18, R9
	ADDQ $18, R10
	ADDQ $18, R11
	ADDQ $34, DI
	ADDQ $34, BX
	ADDQ $4, R8
	ADDQ $4, R12
	DECQ CX
	JNZ q4v2loop

q4v2done:
	VMOVUPS X15, (DX)
	VMOVUPS X5, (R13)
	VZEROUPPER
	RET

// func dotQ4_0TotAVX2(w, x *byte, xsum8 *int32, nb int) float32
// One Q4_0 row against one Q8_0 vector, reading the row as one sequential stream (the fastest
// way to pull weights from memory in decoding). Each block's dot product is summed exactly in
// integers (unsigned nibbles times x, minus 8*sum(x)) and added with one scalar FMA: the
// order of llama.cpp's AVX2 kernels for its repacked Q4_0, so results match it bit for bit.
TEXT ·dotQ4_0TotAVX2(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ xsum8+16(FP), R8
	MOVQ nb+24(FP), CX
	VXORPS X0, X0, X0
	VPCMPEQW Y7, Y7, Y7
	VPSRLW $15, Y7, Y7
	MOVL $0x0f0f0f0f, AX
	MOVQ AX, X8
	VPBROADCASTD X8, Y8
	CMPQ CX, $2
	JLT q4tottail

q4totloop2:
	// Two blocks: their totals share the reductions; the FMAs stay one per block, in order.
	VMOVDQU 2(SI), X4
	VPSRLW $4, X4, X5
	VINSERTI128 $1, X5, Y4, Y4
	VPAND Y8, Y4, Y4
	VMOVDQU 20(SI), X6
	VPSRLW $4, X6, X5
	VINSERTI128 $1, X5, Y6, Y6
	VPAND Y8, Y6, Y6
	VMOVDQU 2(DI), Y10
	VMOVDQU 36(DI), Y11
	VPMADDUBSW Y10, Y4, Y4
	VPMADDWD Y7, Y4, Y4
	VPMADDUBSW Y11, Y6, Y6
	VPMADDWD Y7, Y6, Y6
	VPHADDD Y6, Y4, Y4
	VEXTRACTI128 $1, Y4, X5
	VPADDD X5, X4, X4
	VPHADDD X4, X4, X4         // [sum(q*x) of block 0, of block 1, ...]
	VMOVQ (R8), X5
	VPSUBD X5, X4, X4          // minus 8*sum(x)
	VCVTDQ2PS X4, X4
	VPXOR X5, X5, X5
	VPINSRW $0, (SI), X5, X5
	VPINSRW $1, 18(SI), X5, X5
	VCVTPH2PS X5, X5
	VPXOR X6, X6, X6
	VPINSRW $0, (DI), X6, X6
	VPINSRW $1, 34(DI), X6, X6
	VCVTPH2PS X6, X6
	VMULPS X6, X5, X5          // d_w * d_x of both blocks
	VFMADD231SS X4, X5, X0
	VMOVSHDUP X4, X4
	VMOVSHDUP X5, X5
	VFMADD231SS X4, X5, X0
	ADDQ $36, SI
	ADDQ $68, DI
	ADDQ $8, R8
	SUBQ $2, CX
	CMPQ CX, $2
	JGE q4totloop2

q4tottail:
	TESTQ CX, CX
	JZ q4totdone
	VMOVDQU 2(SI), X4
	VPSRLW $4, X4, X5
	VINSERTI128 $1, X5, Y4, Y4
	VPAND Y8, Y4, Y4
	VMOVDQU 2(DI), Y10
	VPMADDUBSW Y10, Y4, Y4
	VPMADDWD Y7, Y4, Y4
	VEXTRACTI128 $1, Y4, X5
	VPADDD X5, X4, X4
	VPSHUFD $0x4e, X4, X5
	VPADDD X5, X4, X4
	VPSHUFD $0xb1, X4, X5
	VPADDD X5, X4, X4          // sum(q*x) in every lane
	VMOVD (R8), X5
	VPSUBD X5, X4, X4          // lane 0: sum((q-8)*x)
	VCVTDQ2PS X4, X4
	VPBROADCASTW (SI), X5
	VCVTPH2PS X5, X5
	VPBROADCASTW (DI), X6
	VCVTPH2PS X6, X6
	VMULSS X6, X5, X5
	VFMADD231SS X4, X5, X0

q4totdone:
	VZEROUPPER
	MOVSS X0, ret+32(FP)
	RET
