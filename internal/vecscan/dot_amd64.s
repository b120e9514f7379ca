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

// func dotU4I8AVX2(x *int8, v *byte, n int) int32
//
// Σ over the n bytes of v (a positive multiple of 32) of lo·x[i] + hi·x[i+32]
// for the low and high nibbles (0..15) of byte j of each 32-byte block,
// where i = 64·block + j (see vecSet.q4). VPMADDUBSW's pair sums of
// 15·127 fit int16 without saturating.
TEXT ·dotU4I8AVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ v+8(FP), DI
	MOVQ n+16(FP), CX
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X7
	VPBROADCASTD X7, Y7
	MOVL $0x00010001, AX
	VMOVD AX, X6
	VPBROADCASTD X6, Y6
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1

loop4:
	VMOVDQU    (DI), Y2
	VPSRLW     $4, Y2, Y3
	VPAND      Y7, Y2, Y2
	VPAND      Y7, Y3, Y3
	VPMADDUBSW (SI), Y2, Y2
	VPMADDUBSW 32(SI), Y3, Y3
	VPMADDWD   Y6, Y2, Y2
	VPMADDWD   Y6, Y3, Y3
	VPADDD     Y2, Y0, Y0
	VPADDD     Y3, Y1, Y1
	ADDQ       $32, DI
	ADDQ       $64, SI
	SUBQ       $32, CX
	JNZ        loop4

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

// func quantI8AVX2(v *float32, dst *int8, n int, k, inv, scale float64) float64
//
// The int8 code of quantizeWith for n elements (a positive multiple of 8):
// dst[i] = floor(v[i]·k + 0.5), with the same float64 operations as the Go
// loop; returns Σ (v[i]·inv − scale·dst[i])².
TEXT ·quantI8AVX2(SB), NOSPLIT, $0-56
	MOVQ         v+0(FP), SI
	MOVQ         dst+8(FP), DI
	MOVQ         n+16(FP), CX
	VBROADCASTSD k+24(FP), Y10
	VBROADCASTSD inv+32(FP), Y9
	VBROADCASTSD scale+40(FP), Y8
	MOVQ         $0x3FE0000000000000, AX
	VMOVQ        AX, X11
	VBROADCASTSD X11, Y11
	VXORPD       Y12, Y12, Y12

q8loop:
	VCVTPS2PD   (SI), Y1
	VCVTPS2PD   16(SI), Y2
	VMULPD      Y10, Y1, Y3
	VMULPD      Y10, Y2, Y4
	VADDPD      Y11, Y3, Y3
	VADDPD      Y11, Y4, Y4
	VROUNDPD    $1, Y3, Y3
	VROUNDPD    $1, Y4, Y4
	VMULPD      Y9, Y1, Y1
	VMULPD      Y9, Y2, Y2
	VMULPD      Y8, Y3, Y5
	VMULPD      Y8, Y4, Y6
	VSUBPD      Y5, Y1, Y1
	VSUBPD      Y6, Y2, Y2
	VMULPD      Y1, Y1, Y1
	VMULPD      Y2, Y2, Y2
	VADDPD      Y1, Y12, Y12
	VADDPD      Y2, Y12, Y12
	VCVTTPD2DQY Y3, X5
	VCVTTPD2DQY Y4, X6
	VPACKSSDW   X6, X5, X5
	VPACKSSWB   X5, X5, X5
	VMOVQ       X5, (DI)
	ADDQ        $32, SI
	ADDQ        $8, DI
	SUBQ        $8, CX
	JNZ         q8loop

	VEXTRACTF128 $1, Y12, X13
	VADDPD       X13, X12, X12
	VUNPCKHPD    X12, X12, X13
	VADDSD       X13, X12, X12
	VZEROUPPER
	MOVSD        X12, ret+48(FP)
	RET

// quad4 codes the four floats at off(SI) into the int32 lanes of X: the
// same floor(v·k + 0.5) as quantI8AVX2 (k, inv, scale in Y10, Y9, Y8, 0.5
// in Y11), accumulating the squared errors into Y12.
#define QUAD4(off, X) \
	VCVTPS2PD   off(SI), Y1; \
	VMULPD      Y10, Y1, Y5; \
	VADDPD      Y11, Y5, Y5; \
	VROUNDPD    $1, Y5, Y5; \
	VMULPD      Y9, Y1, Y1; \
	VMULPD      Y8, Y5, Y6; \
	VSUBPD      Y6, Y1, Y1; \
	VMULPD      Y1, Y1, Y1; \
	VADDPD      Y1, Y12, Y12; \
	VCVTTPD2DQY Y5, X

// func quantU4AVX2(v *float32, dst *byte, blocks int, k, inv, scale float64) float64
//
// The 4-bit code of quantize4With for blocks full blocks of 64 elements
// (see vecSet.q4); returns the sum of the squared errors.
TEXT ·quantU4AVX2(SB), NOSPLIT, $0-56
	MOVQ         v+0(FP), SI
	MOVQ         dst+8(FP), DI
	MOVQ         blocks+16(FP), CX
	VBROADCASTSD k+24(FP), Y10
	VBROADCASTSD inv+32(FP), Y9
	VBROADCASTSD scale+40(FP), Y8
	MOVQ         $0x3FE0000000000000, AX
	VMOVQ        AX, X11
	VBROADCASTSD X11, Y11
	VXORPD       Y12, Y12, Y12
	MOVL         $8, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14

q4block:
	MOVQ $4, DX

q4loop:
	QUAD4(0, X0)
	QUAD4(16, X2)
	QUAD4(128, X3)
	QUAD4(144, X4)
	VINSERTI128  $1, X2, Y0, Y0
	VINSERTI128  $1, X4, Y3, Y3
	VPADDD       Y14, Y0, Y0
	VPADDD       Y14, Y3, Y3
	VPSLLD       $4, Y3, Y3
	VPOR         Y3, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPACKUSDW    X1, X0, X0
	VPACKUSWB    X0, X0, X0
	VMOVQ        X0, (DI)
	ADDQ         $32, SI
	ADDQ         $8, DI
	DECQ         DX
	JNZ          q4loop
	ADDQ         $128, SI
	DECQ         CX
	JNZ          q4block

	VEXTRACTF128 $1, Y12, X13
	VADDPD       X13, X12, X12
	VUNPCKHPD    X12, X12, X13
	VADDSD       X13, X12, X12
	VZEROUPPER
	MOVSD        X12, ret+48(FP)
	RET

// func dot64AVX2(a, b *float32, n int) float64
//
// dot64Go's sum of the first n elements (a positive multiple of 16): the
// products of elements 4k..4k+3 of each block of sixteen accumulate in the
// lanes of Y(k), multiplied and added as separate roundings (no FMA), and
// the sixteen sums are reduced in dot64Go's order.
TEXT ·dot64AVX2(SB), NOSPLIT, $0-32
	MOVQ   a+0(FP), SI
	MOVQ   b+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3

loop64:
	VCVTPS2PD (SI), Y4
	VCVTPS2PD (DI), Y5
	VMULPD    Y5, Y4, Y4
	VADDPD    Y4, Y0, Y0
	VCVTPS2PD 16(SI), Y6
	VCVTPS2PD 16(DI), Y7
	VMULPD    Y7, Y6, Y6
	VADDPD    Y6, Y1, Y1
	VCVTPS2PD 32(SI), Y8
	VCVTPS2PD 32(DI), Y9
	VMULPD    Y9, Y8, Y8
	VADDPD    Y8, Y2, Y2
	VCVTPS2PD 48(SI), Y10
	VCVTPS2PD 48(DI), Y11
	VMULPD    Y11, Y10, Y10
	VADDPD    Y10, Y3, Y3
	ADDQ      $64, SI
	ADDQ      $64, DI
	SUBQ      $16, CX
	JNZ       loop64

	VADDPD       Y1, Y0, Y0
	VADDPD       Y3, Y2, Y2
	VADDPD       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VHADDPD      X0, X0, X0
	VHADDPD      X1, X1, X1
	VADDSD       X1, X0, X0
	VZEROUPPER
	MOVSD        X0, ret+24(FP)
	RET

// func hammingsAVX2(x, v *uint64, words, n int, out *uint16)
//
// out[j] = the differing bits of x[:words] and v[j·words:(j+1)·words] for
// j < n (n ≥ 1; words a positive multiple of 4; each count below 2^16).
// Each 32-byte block's XOR is counted by nibble lookup (VPSHUFB) and summed
// into 64-bit lanes (VPSADBW).
TEXT ·hammingsAVX2(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ v+8(FP), DI
	MOVQ words+16(FP), R8
	MOVQ n+24(FP), R9
	MOVQ out+32(FP), R10
	MOVQ $0x0302020102010100, AX
	VMOVQ AX, X6
	MOVQ $0x0403030203020201, AX
	VPINSRQ $1, AX, X6, X6
	VINSERTI128 $1, X6, Y6, Y6
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X7
	VPBROADCASTD X7, Y7
	VPXOR Y3, Y3, Y3

vecLoop:
	MOVQ  SI, R11
	MOVQ  R8, CX
	VPXOR Y0, Y0, Y0

blkLoop:
	VMOVDQU (R11), Y1
	VPXOR   (DI), Y1, Y1
	VPSRLW  $4, Y1, Y2
	VPAND   Y7, Y1, Y1
	VPAND   Y7, Y2, Y2
	VPSHUFB Y1, Y6, Y1
	VPSHUFB Y2, Y6, Y2
	VPADDB  Y2, Y1, Y1
	VPSADBW Y3, Y1, Y1
	VPADDQ  Y1, Y0, Y0
	ADDQ    $32, R11
	ADDQ    $32, DI
	SUBQ    $4, CX
	JNZ     blkLoop

	VEXTRACTI128 $1, Y0, X1
	VPADDQ       X1, X0, X0
	VPSHUFD      $0x4e, X0, X1
	VPADDQ       X1, X0, X0
	VMOVQ        X0, AX
	MOVW         AX, (R10)
	ADDQ         $2, R10
	DECQ         R9
	JNZ          vecLoop

	VZEROUPPER
	RET

// func dotSplitVNNI(lo, hi *byte, v *int8, n int) (a, b int32)
//
// For a query code split into bytes, x[i] = 256·hi[i] + lo[i] (hi signed,
// lo unsigned), the two sums the AVX-512 VNNI instruction VPDPBUSD (four
// unsigned × signed byte products added to each int32 lane) can form:
// b = Σ lo[i]·v[i] and a = Σ hi[i]·(v[i]+128) (v's sign bit flipped makes
// it unsigned). n is a positive multiple of 32. Four accumulators per sum
// hide the instruction's latency; every lane stays far below 2³¹ (at most
// 255·128 per product and n/16 products per lane).
TEXT ·dotSplitVNNI(SB), NOSPLIT, $0-40
	MOVQ lo+0(FP), SI
	MOVQ hi+8(FP), R8
	MOVQ v+16(FP), DI
	MOVQ n+24(FP), CX
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z31
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	CMPQ CX, $256
	JLT  loop64

loop256:
	VMOVDQU32 (DI), Z2
	VMOVDQU32 64(DI), Z11
	VMOVDQU32 128(DI), Z12
	VMOVDQU32 192(DI), Z13
	VMOVDQU32 (SI), Z3
	VMOVDQU32 64(SI), Z14
	VMOVDQU32 128(SI), Z15
	VMOVDQU32 192(SI), Z16
	VPDPBUSD  Z2, Z3, Z0
	VPDPBUSD  Z11, Z14, Z5
	VPDPBUSD  Z12, Z15, Z7
	VPDPBUSD  Z13, Z16, Z9
	VPXORD    Z31, Z2, Z2
	VPXORD    Z31, Z11, Z11
	VPXORD    Z31, Z12, Z12
	VPXORD    Z31, Z13, Z13
	VPDPBUSD  (R8), Z2, Z1
	VPDPBUSD  64(R8), Z11, Z6
	VPDPBUSD  128(R8), Z12, Z8
	VPDPBUSD  192(R8), Z13, Z10
	ADDQ      $256, DI
	ADDQ      $256, SI
	ADDQ      $256, R8
	SUBQ      $256, CX
	CMPQ      CX, $256
	JGE       loop256

loop64:
	CMPQ      CX, $64
	JLT       tail32
	VMOVDQU32 (DI), Z2
	VMOVDQU32 (SI), Z3
	VPDPBUSD  Z2, Z3, Z0
	VPXORD    Z31, Z2, Z2
	VPDPBUSD  (R8), Z2, Z1
	ADDQ      $64, DI
	ADDQ      $64, SI
	ADDQ      $64, R8
	SUBQ      $64, CX
	JMP       loop64

tail32:
	TESTQ     CX, CX
	JZ        reduce
	VPXORD    Y11, Y11, Y11
	VPXORD    Y12, Y12, Y12
	VMOVDQU32 (DI), Y2
	VMOVDQU32 (SI), Y3
	VPDPBUSD  Y2, Y3, Y11
	VPXORD    Y31, Y2, Y2
	VPDPBUSD  (R8), Y2, Y12
	VPADDD    Z11, Z5, Z5
	VPADDD    Z12, Z6, Z6

reduce:
	VPADDD Z5, Z0, Z0
	VPADDD Z9, Z7, Z7
	VPADDD Z7, Z0, Z0
	VPADDD Z6, Z1, Z1
	VPADDD Z10, Z8, Z8
	VPADDD Z8, Z1, Z1
	VEXTRACTI64X4 $1, Z0, Y2
	VPADDD        Y2, Y0, Y0
	VEXTRACTI64X4 $1, Z1, Y3
	VPADDD        Y3, Y1, Y1
	VEXTRACTI128  $1, Y0, X2
	VPADDD        X2, X0, X0
	VEXTRACTI128  $1, Y1, X3
	VPADDD        X3, X1, X1
	VPSHUFD       $0x4e, X0, X2
	VPADDD        X2, X0, X0
	VPSHUFD       $0x4e, X1, X3
	VPADDD        X3, X1, X1
	VPSHUFD       $0xb1, X0, X2
	VPADDD        X2, X0, X0
	VPSHUFD       $0xb1, X1, X3
	VPADDD        X3, X1, X1
	VMOVD         X0, AX
	VMOVD         X1, BX
	VZEROUPPER
	MOVL          BX, a+32(FP)
	MOVL          AX, b+36(FP)
	RET
