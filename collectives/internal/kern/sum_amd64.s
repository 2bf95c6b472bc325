//go:build !noasm

#include "textflag.h"

// func sumFloat32AVX2(in, inout *float32, n int)
// n is a positive multiple of 32: each iteration adds 128 bytes of in into inout.
TEXT ·sumFloat32AVX2(SB), NOSPLIT, $0-24
	MOVQ in+0(FP), SI
	MOVQ inout+8(FP), DI
	MOVQ n+16(FP), CX
loop32:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VADDPS  (DI), Y0, Y0
	VADDPS  32(DI), Y1, Y1
	VADDPS  64(DI), Y2, Y2
	VADDPS  96(DI), Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DI
	SUBQ    $32, CX
	JNZ     loop32
	VZEROUPPER
	RET

// func sumFloat64AVX2(in, inout *float64, n int)
// n is a positive multiple of 16.
TEXT ·sumFloat64AVX2(SB), NOSPLIT, $0-24
	MOVQ in+0(FP), SI
	MOVQ inout+8(FP), DI
	MOVQ n+16(FP), CX
loop64:
	VMOVUPD (SI), Y0
	VMOVUPD 32(SI), Y1
	VMOVUPD 64(SI), Y2
	VMOVUPD 96(SI), Y3
	VADDPD  (DI), Y0, Y0
	VADDPD  32(DI), Y1, Y1
	VADDPD  64(DI), Y2, Y2
	VADDPD  96(DI), Y3, Y3
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DI
	SUBQ    $16, CX
	JNZ     loop64
	VZEROUPPER
	RET

// func sumF16F16C(in, inout *uint16, n int)
// n is a positive multiple of 16: widen 16 halves of each operand to float32 (F16C), add, and
// round back to nearest even (imm8 = 0), as the pure-Go ReduceF16 does.
TEXT ·sumF16F16C(SB), NOSPLIT, $0-24
	MOVQ in+0(FP), SI
	MOVQ inout+8(FP), DI
	MOVQ n+16(FP), CX
loop16:
	VCVTPH2PS (SI), Y0
	VCVTPH2PS 16(SI), Y1
	VCVTPH2PS (DI), Y2
	VCVTPH2PS 16(DI), Y3
	VADDPS    Y2, Y0, Y0
	VADDPS    Y3, Y1, Y1
	VCVTPS2PH $0, Y0, (DI)
	VCVTPS2PH $0, Y1, 16(DI)
	ADDQ      $32, SI
	ADDQ      $32, DI
	SUBQ      $16, CX
	JNZ       loop16
	VZEROUPPER
	RET
