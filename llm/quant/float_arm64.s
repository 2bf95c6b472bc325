//go:build arm64 && !noasm

#include "textflag.h"

// NEON kernels for the float paths: F32 and F16 weight rows, the F16 KV-cache attention
// (dot products of a query with the cached keys, accumulation of the cached values) and the
// F16 <-> F32 slice conversions. Halves are widened with FCVTL/FCVTL2 and narrowed with
// FCVTN/FCVTN2 (ARMv8.0 NEON, no FP16 arithmetic); every product is accumulated with a fused
// multiply-add (FMLA). The float operations and their order are those of the AVX2 kernels in
// dot_amd64.s and attn_amd64.s, a ymm register being a pair of NEON registers: the F16 dot
// products keep 16 partial sums (element i of a block of 16 in lane i%4 of accumulator
// V16+i/4), the F32 one 32 (V16..V23), folded as the AVX2 kernels fold them (DOTFOLD,
// DOTFOLD32). float_arm64_test.go has the Go twins.

// Instructions the Go assembler has no mnemonic for, encoded by register number.
#define FCVTL_4S(n, d) WORD $(0x0E217800 | (n<<5) | d)
#define FCVTL2_4S(n, d) WORD $(0x4E217800 | (n<<5) | d)
#define FCVTN_4H(n, d) WORD $(0x0E216800 | (n<<5) | d)
#define FCVTN2_8H(n, d) WORD $(0x4E216800 | (n<<5) | d)
#define FMLA_4S(m, n, d) WORD $(0x4E20CC00 | (m<<16) | (n<<5) | d)
#define FMLA_4S_S0(m, n, d) WORD $(0x4F801000 | (m<<16) | (n<<5) | d)
#define FMUL_4S_S0(m, n, d) WORD $(0x4F809000 | (m<<16) | (n<<5) | d)
#define FADD_4S(m, n, d) WORD $(0x4E20D400 | (m<<16) | (n<<5) | d)
#define FADDP_4S(m, n, d) WORD $(0x6E20D400 | (m<<16) | (n<<5) | d)
#define FADDP_S(n, d) WORD $(0x7E30D800 | (n<<5) | d)
#define ZERO(d) WORD $(0x6F00E400 | d)

#define ZERO4 \
	ZERO(16) \
	ZERO(17) \
	ZERO(18) \
	ZERO(19)

// DOTF16: 16 halves at R_a and R_b (post-incremented by 32 bytes) into V16..V19.
#define DOTF16(ra, rb) \
	VLD1.P 32(ra), [V0.H8, V1.H8] \
	VLD1.P 32(rb), [V2.H8, V3.H8] \
	FCVTL_4S(0, 4) \
	FCVTL2_4S(0, 5) \
	FCVTL_4S(1, 6) \
	FCVTL2_4S(1, 7) \
	FCVTL_4S(2, 20) \
	FCVTL2_4S(2, 21) \
	FCVTL_4S(3, 22) \
	FCVTL2_4S(3, 23) \
	FMLA_4S(20, 4, 16) \
	FMLA_4S(21, 5, 17) \
	FMLA_4S(22, 6, 18) \
	FMLA_4S(23, 7, 19)

// DOTFOLD: u = (V16+V18)+(V17+V19) (AVX2: the two 8-lane sums added, then the halves), F0 =
// (u0+u1)+(u2+u3) (two horizontal adds).
#define DOTFOLD \
	FADD_4S(18, 16, 16) \
	FADD_4S(19, 17, 17) \
	FADD_4S(17, 16, 16) \
	FADDP_4S(16, 16, 16) \
	FADDP_S(16, 0)

// DOTFOLD32: u = ((V16+V18)+(V20+V22)) + ((V17+V19)+(V21+V23)) (AVX2: (Y0+Y1)+(Y2+Y3), then
// the halves), F0 = (u0+u1)+(u2+u3).
#define DOTFOLD32 \
	FADD_4S(18, 16, 16) \
	FADD_4S(19, 17, 17) \
	FADD_4S(22, 20, 20) \
	FADD_4S(23, 21, 21) \
	FADD_4S(20, 16, 16) \
	FADD_4S(21, 17, 17) \
	FADD_4S(17, 16, 16) \
	FADDP_4S(16, 16, 16) \
	FADDP_S(16, 0)

// func dotF16NEON(a, b *byte, n int) float32
// n is a positive multiple of 16.
TEXT ·dotF16NEON(SB), NOSPLIT, $0-28
	MOVD a+0(FP), R0
	MOVD b+8(FP), R1
	MOVD n+16(FP), R2
	ZERO4

f16loop:
	DOTF16(R0, R1)
	SUBS $16, R2, R2
	BNE f16loop
	DOTFOLD
	FMOVS F0, ret+24(FP)
	RET

// func dotF32NEON(w *byte, x *float32, n int) float32
// n is a positive multiple of 32.
TEXT ·dotF32NEON(SB), NOSPLIT, $0-28
	MOVD w+0(FP), R0
	MOVD x+8(FP), R1
	MOVD n+16(FP), R2
	ZERO4
	ZERO(20)
	ZERO(21)
	ZERO(22)
	ZERO(23)

f32loop:
	VLD1.P 64(R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R0), [V4.S4, V5.S4, V6.S4, V7.S4]
	VLD1.P 64(R1), [V24.S4, V25.S4, V26.S4, V27.S4]
	VLD1.P 64(R1), [V28.S4, V29.S4, V30.S4, V31.S4]
	FMLA_4S(24, 0, 16)
	FMLA_4S(25, 1, 17)
	FMLA_4S(26, 2, 18)
	FMLA_4S(27, 3, 19)
	FMLA_4S(28, 4, 20)
	FMLA_4S(29, 5, 21)
	FMLA_4S(30, 6, 22)
	FMLA_4S(31, 7, 23)
	SUBS $32, R2, R2
	BNE f32loop
	DOTFOLD32
	FMOVS F0, ret+24(FP)
	RET

// AXPY16: V8..V11 (16 floats) += F31 times the 16 halves at ra (post-incremented by 32).
#define AXPY16(ra) \
	VLD1.P 32(ra), [V0.H8, V1.H8] \
	FCVTL_4S(0, 4) \
	FCVTL2_4S(0, 5) \
	FCVTL_4S(1, 6) \
	FCVTL2_4S(1, 7) \
	FMLA_4S_S0(31, 4, 8) \
	FMLA_4S_S0(31, 5, 9) \
	FMLA_4S_S0(31, 6, 10) \
	FMLA_4S_S0(31, 7, 11)

// func axpyF16NEON(out *float32, a float32, v *byte, n int)
// out[i] += a*v[i] (fused) for i < n, n a positive multiple of 8.
TEXT ·axpyF16NEON(SB), NOSPLIT, $0-32
	MOVD out+0(FP), R0
	FMOVS a+8(FP), F31
	MOVD v+16(FP), R1
	MOVD n+24(FP), R2
	CMP $16, R2
	BLT ax8

axloop:
	VLD1 (R0), [V8.S4, V9.S4, V10.S4, V11.S4]
	AXPY16(R1)
	VST1.P [V8.S4, V9.S4, V10.S4, V11.S4], 64(R0)
	SUB $16, R2, R2
	CMP $16, R2
	BGE axloop

ax8:
	CBZ R2, axdone
	VLD1 (R0), [V8.S4, V9.S4]
	VLD1 (R1), [V0.H8]
	FCVTL_4S(0, 4)
	FCVTL2_4S(0, 5)
	FMLA_4S_S0(31, 4, 8)
	FMLA_4S_S0(31, 5, 9)
	VST1 [V8.S4, V9.S4], (R0)

axdone:
	RET

// func dotF16RowsNEON(q, k *uint16, stride, n, hd int, scale float32, out *float32) float32
// out[p] = dot(q, the hd halves at k + p*stride bytes) * scale for p < n, as dotF16NEON
// computes each; returns their maximum. n > 0, hd a positive multiple of 16.
TEXT ·dotF16RowsNEON(SB), NOSPLIT, $0-60
	MOVD q+0(FP), R0
	MOVD k+8(FP), R1
	MOVD stride+16(FP), R2
	MOVD n+24(FP), R3
	MOVD hd+32(FP), R4
	FMOVS scale+40(FP), F24
	MOVD out+48(FP), R5
	MOVW $0xff800000, R6
	FMOVS R6, F25 // -Inf

rowloop:
	MOVD R0, R7
	MOVD R1, R8
	MOVD R4, R9
	ZERO4

rowdot:
	DOTF16(R7, R8)
	SUBS $16, R9, R9
	BNE rowdot
	DOTFOLD
	FMULS F24, F0, F0
	FMOVS.P F0, 4(R5)
	FMAXS F0, F25, F25
	ADD R2, R1, R1
	SUBS $1, R3, R3
	BNE rowloop
	FMOVS F25, ret+56(FP)
	RET

// func axpyF16RowsNEON(out, w *float32, v *uint16, stride, n, hd int)
// out[j] += w[p] * v[p*stride bytes + j] (fused) for p = 0..n-1 in order, for j < hd: 16
// values of out stay in registers while every row adds to them. n > 0, hd a positive
// multiple of 16.
TEXT ·axpyF16RowsNEON(SB), NOSPLIT, $0-48
	MOVD out+0(FP), R0
	MOVD w+8(FP), R1
	MOVD v+16(FP), R2
	MOVD stride+24(FP), R3
	MOVD n+32(FP), R4
	MOVD hd+40(FP), R5

chunk:
	VLD1 (R0), [V8.S4, V9.S4, V10.S4, V11.S4]
	MOVD R1, R6
	MOVD R2, R7
	MOVD R4, R8

rows:
	MOVD R7, R9
	FMOVS.P 4(R6), F31
	AXPY16(R9)
	ADD R3, R7, R7
	SUBS $1, R8, R8
	BNE rows
	VST1.P [V8.S4, V9.S4, V10.S4, V11.S4], 64(R0)
	ADD $32, R2, R2
	SUBS $16, R5, R5
	BNE chunk
	RET

// func f32ToF16NEON(dst *uint16, src *float32, n int)
// n is a positive multiple of 8. FCVTN rounds to nearest even (the FPCR default) and keeps
// a NaN's sign and top payload bits with the quiet bit set, as half.F32ToF16 does.
TEXT ·f32ToF16NEON(SB), NOSPLIT, $0-24
	MOVD dst+0(FP), R0
	MOVD src+8(FP), R1
	MOVD n+16(FP), R2

cvloop:
	VLD1.P 32(R1), [V0.S4, V1.S4]
	FCVTN_4H(0, 2)
	FCVTN2_8H(1, 2)
	VST1.P [V2.H8], 16(R0)
	SUBS $8, R2, R2
	BNE cvloop
	RET

// func roundF16NEON(x *float32, n int, a float32)
// x[i] = float32(half(a*x[i])) for i < n, n a positive multiple of 8.
TEXT ·roundF16NEON(SB), NOSPLIT, $0-20
	MOVD x+0(FP), R0
	MOVD n+8(FP), R1
	FMOVS a+16(FP), F31

rdloop:
	VLD1 (R0), [V0.S4, V1.S4]
	FMUL_4S_S0(31, 0, 0)
	FMUL_4S_S0(31, 1, 1)
	FCVTN_4H(0, 2)
	FCVTN2_8H(1, 2)
	FCVTL_4S(2, 0)
	FCVTL2_4S(2, 1)
	VST1.P [V0.S4, V1.S4], 32(R0)
	SUBS $8, R1, R1
	BNE rdloop
	RET
