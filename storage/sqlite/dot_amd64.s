//go:build !purego

#include "textflag.h"

// func dotI16I8AVX2(x *int16, v *int8, n int) int32
//
// Σ x[i]·v[i] for i < n; n is a positive multiple of 32. Products of an
// int16 in [-127, 127] and an int8 fit the int32 lanes of VPMADDWD for any
// n below 2^17.
TEXT ·dotI16I8AVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ v+8(FP), DI
	MOVQ n+16(FP), CX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1

loop:
	VPMOVSXBW (DI), Y2
	VPMOVSXBW 16(DI), Y3
	VPMADDWD  (SI), Y2, Y2
	VPMADDWD  32(SI), Y3, Y3
	VPADDD    Y2, Y0, Y0
	VPADDD    Y3, Y1, Y1
	ADDQ      $32, DI
	ADDQ      $64, SI
	SUBQ      $32, CX
	JNZ       loop

	VPADDD       Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0x4e, X0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0xb1, X0, X1
	VPADDD       X1, X0, X0
	VMOVD        X0, AX
	VZEROUPPER
	MOVL         AX, ret+24(FP)
	RET
