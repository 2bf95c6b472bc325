//go:build amd64 && !noasm

#include "textflag.h"

// Block dot products with AVX2 + FMA + F16C. Each block's integer dot product is exact
// (VPMADDUBSW on |w| and x*sign(w) cannot saturate: |w| <= 128, |x| <= 127), converted to
// float and accumulated as d_w*d_x*sum with FMA in 8 lanes, like llama.cpp's AVX2 kernels.

// func dotQ8_0AVX2(w, x *byte, nb int) float32
TEXT ·dotQ8_0AVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ nb+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y10, Y10, Y10
	VPCMPEQW Y7, Y7, Y7
	VPSRLW $15, Y7, Y7          // int16 ones
	CMPQ CX, $2
	JLT q8tail

q8loop2:
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

	VPBROADCASTW 34(SI), X11
	VCVTPH2PS X11, Y11
	VPBROADCASTW 34(DI), X12
	VCVTPH2PS X12, Y12
	VMULPS Y12, Y11, Y11
	VMOVDQU 36(SI), Y12
	VMOVDQU 36(DI), Y13
	VPSIGNB Y12, Y12, Y14
	VPSIGNB Y12, Y13, Y15
	VPMADDUBSW Y15, Y14, Y6
	VPMADDWD Y7, Y6, Y6
	VCVTDQ2PS Y6, Y6
	VFMADD231PS Y6, Y11, Y10

	ADDQ $68, SI
	ADDQ $68, DI
	SUBQ $2, CX
	CMPQ CX, $2
	JGE q8loop2

q8tail:
	TESTQ CX, CX
	JZ q8done
	VPBROADCASTW (SI), X1
	VCVTPH2PS X1, Y1
	VPBROADCASTW (DI), X2
	VCVTPH2PS X2, Y2
	VMULPS Y2, Y1, Y1
	VMOVDQU 2(SI), Y2
	VMOVDQU 2(DI), Y3
	VPSIGNB Y2, Y2, Y4
	VPSIGNB Y2, Y3, Y5
	VPMADDUBSW Y5, Y4, Y6
	VPMADDWD Y7, Y6, Y6
	VCVTDQ2PS Y6, Y6
	VFMADD231PS Y6, Y1, Y0

q8done:
	VADDPS Y10, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
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
	TESTQ CX, CX
	JZ q4done

q4loop:
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
	ADDQ $18, SI
	ADDQ $34, DI
	DECQ CX
	JNZ q4loop

q4done:
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
