package pause

import (
	"encoding/binary"
	"fmt"
)

// arm64 Linux syscall numbers (include/uapi/asm-generic/unistd.h).
const (
	arm64SysExitGroup      = 94
	arm64SysRtSigprocmask  = 135
	arm64SysRtSigtimedwait = 137
	arm64SysWait4          = 260
)

// arm64 registers and condition codes used below.
const (
	x0, x1, x2, x3, x8 = 0, 1, 2, 3, 8
	condEQ, condGT     = 0x0, 0xc
)

// arm64Code returns the AArch64 machine code of the pause loop (see
// Executable). Syscall ABI: number in x8, arguments in x0-x3, result in x0;
// svc #0 preserves every other register. Instructions are 32-bit little
// endian words; see the encoders below (Arm ARM, A64 base instructions).
func arm64Code() []byte {
	a := newAsm()
	w := func(ins uint32) { a.code = binary.LittleEndian.AppendUint32(a.code, ins) }
	// rt_sigprocmask(SIG_BLOCK, &allset, NULL, 8)
	w(movz(x0, sigBlock))               // mov x0, #0   (SIG_BLOCK)
	a.ref("allset", adrFix(x1))         //
	w(0)                                // adr x1, allset
	w(movz(x2, 0))                      // mov x2, #0   (oldset = NULL)
	w(movz(x3, sigsetLen))              // mov x3, #8   (sigsetsize)
	w(movz(x8, arm64SysRtSigprocmask))  // mov x8, #135
	w(svc0)                             // svc #0
	a.label("reap")                     // reap:
	w(movn(x0, 0))                      // mov x0, #-1  (any child)
	w(movz(x1, 0))                      // mov x1, #0   (wstatus = NULL)
	w(movz(x2, wNoHang))                // mov x2, #1   (WNOHANG)
	w(movz(x3, 0))                      // mov x3, #0   (rusage = NULL)
	w(movz(x8, arm64SysWait4))          // mov x8, #260
	w(svc0)                             // svc #0
	w(cmpImm(x0, 0))                    // cmp x0, #0
	a.ref("reap", bcondFix(condGT))     //
	w(0)                                // b.gt reap    (reaped one: try again)
	a.label("wait")                     // wait:
	a.ref("waitset", adrFix(x0))        //
	w(0)                                // adr x0, waitset
	w(movz(x1, 0))                      // mov x1, #0   (info = NULL)
	w(movz(x2, 0))                      // mov x2, #0   (timeout = NULL: forever)
	w(movz(x3, sigsetLen))              // mov x3, #8   (sigsetsize)
	w(movz(x8, arm64SysRtSigtimedwait)) // mov x8, #137
	w(svc0)                             // svc #0       (x0 = signal or -errno)
	w(cmpImm(x0, sigCHLD))              // cmp x0, #17
	a.ref("reap", bcondFix(condEQ))     //
	w(0)                                // b.eq reap
	w(cmpImm(x0, sigINT))               // cmp x0, #2
	a.ref("exit", bcondFix(condEQ))     //
	w(0)                                // b.eq exit
	w(cmpImm(x0, sigTERM))              // cmp x0, #15
	a.ref("exit", bcondFix(condEQ))     //
	w(0)                                // b.eq exit
	a.ref("wait", bFix)                 //
	w(0)                                // b wait       (an error such as EINTR)
	a.label("exit")                     // exit:
	w(movz(x0, 0))                      // mov x0, #0   (status 0)
	w(movz(x8, arm64SysExitGroup))      // mov x8, #94
	w(svc0)                             // svc #0       (does not return)
	a.align(8)                          //
	a.label("allset")                   // allset:
	a.quad(allSet)                      //   .quad -1
	a.label("waitset")                  // waitset:
	a.quad(waitSet)                     //   .quad INT|TERM|CHLD
	return a.assemble()
}

// svc0 is SVC #0.
const svc0 = 0xd4000001

// movz is MOVZ Xd, #imm16 (64-bit, shift 0).
func movz(rd, imm16 uint32) uint32 { return 0xd2800000 | imm16<<5 | rd }

// movn is MOVN Xd, #imm16: Xd = ^imm16 (MOVN x0, #0 sets x0 to -1).
func movn(rd, imm16 uint32) uint32 { return 0x92800000 | imm16<<5 | rd }

// cmpImm is CMP Xn, #imm12, an alias of SUBS XZR, Xn, #imm12.
func cmpImm(rn, imm12 uint32) uint32 { return 0xf100001f | imm12<<10 | rn<<5 }

// adrFix patches ADR Xd, label: a 21-bit byte offset from the instruction,
// split into immlo (bits 29-30) and immhi (bits 5-23).
func adrFix(rd uint32) func([]byte, int) {
	return func(ins []byte, disp int) {
		if disp < -1<<20 || disp >= 1<<20 {
			panic(fmt.Sprintf("pause: adr out of range (%d)", disp))
		}
		off := uint32(disp) & 0x1fffff
		binary.LittleEndian.PutUint32(ins, 0x10000000|(off&3)<<29|(off>>2)<<5|rd)
	}
}

// bcondFix patches B.cond label: a 19-bit word offset in bits 5-23.
func bcondFix(cond uint32) func([]byte, int) {
	return func(ins []byte, disp int) {
		binary.LittleEndian.PutUint32(ins, 0x54000000|(wordOffset(disp, 19))<<5|cond)
	}
}

// bFix patches B label: a 26-bit word offset in bits 0-25.
func bFix(ins []byte, disp int) {
	binary.LittleEndian.PutUint32(ins, 0x14000000|wordOffset(disp, 26))
}

// wordOffset returns disp/4 as a bits-wide two's complement field.
func wordOffset(disp, bits int) uint32 {
	if disp%4 != 0 || disp/4 < -(1<<(bits-1)) || disp/4 >= 1<<(bits-1) {
		panic(fmt.Sprintf("pause: branch offset %d not encodable in %d bits", disp, bits))
	}
	return uint32(disp/4) & (1<<bits - 1)
}
