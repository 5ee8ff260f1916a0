package pause

import (
	"encoding/binary"
	"fmt"
)

// x86-64 Linux syscall numbers (arch/x86/entry/syscalls/syscall_64.tbl).
const (
	amd64SysRtSigprocmask  = 14
	amd64SysWait4          = 61
	amd64SysRtSigtimedwait = 128
	amd64SysExitGroup      = 231
)

// amd64Code returns the x86-64 machine code of the pause loop (see
// Executable). Syscall ABI: number in eax, arguments in rdi, rsi, rdx, r10;
// result in rax; syscall clobbers only rcx and r11. Writing a 32-bit
// register zero-extends it into the 64-bit one.
func amd64Code() []byte {
	a := newAsm()
	// rt_sigprocmask(SIG_BLOCK, &allset, NULL, 8)
	a.emit(0xb8)                            // mov eax, imm32
	a.emit(le32(amd64SysRtSigprocmask)...)  //   14
	a.emit(0x31, 0xff)                      // xor edi, edi       (SIG_BLOCK = 0)
	a.ref("allset", rel32(3, 7))            //
	a.emit(0x48, 0x8d, 0x35, 0, 0, 0, 0)    // lea rsi, [rip+allset]
	a.emit(0x31, 0xd2)                      // xor edx, edx       (oldset = NULL)
	a.emit(0x41, 0xba, sigsetLen, 0, 0, 0)  // mov r10d, 8        (sigsetsize)
	a.emit(0x0f, 0x05)                      // syscall
	a.label("reap")                         // reap:
	a.emit(0xb8)                            // mov eax, imm32
	a.emit(le32(amd64SysWait4)...)          //   61
	a.emit(0xbf, 0xff, 0xff, 0xff, 0xff)    // mov edi, -1        (any child; pid_t is 32 bits)
	a.emit(0x31, 0xf6)                      // xor esi, esi       (wstatus = NULL)
	a.emit(0xba, wNoHang, 0, 0, 0)          // mov edx, 1         (WNOHANG)
	a.emit(0x45, 0x31, 0xd2)                // xor r10d, r10d     (rusage = NULL)
	a.emit(0x0f, 0x05)                      // syscall
	a.emit(0x48, 0x85, 0xc0)                // test rax, rax
	a.ref("reap", rel8)                     //
	a.emit(0x7f, 0)                         // jg reap            (reaped one: try again)
	a.label("wait")                         // wait:
	a.emit(0xb8)                            // mov eax, imm32
	a.emit(le32(amd64SysRtSigtimedwait)...) //   128
	a.ref("waitset", rel32(3, 7))           //
	a.emit(0x48, 0x8d, 0x3d, 0, 0, 0, 0)    // lea rdi, [rip+waitset]
	a.emit(0x31, 0xf6)                      // xor esi, esi       (info = NULL)
	a.emit(0x31, 0xd2)                      // xor edx, edx       (timeout = NULL: forever)
	a.emit(0x41, 0xba, sigsetLen, 0, 0, 0)  // mov r10d, 8        (sigsetsize)
	a.emit(0x0f, 0x05)                      // syscall            (eax = signal or -errno)
	a.emit(0x83, 0xf8, sigCHLD)             // cmp eax, 17
	a.ref("reap", rel8)                     //
	a.emit(0x74, 0)                         // je reap
	a.emit(0x83, 0xf8, sigINT)              // cmp eax, 2
	a.ref("exit", rel8)                     //
	a.emit(0x74, 0)                         // je exit
	a.emit(0x83, 0xf8, sigTERM)             // cmp eax, 15
	a.ref("exit", rel8)                     //
	a.emit(0x74, 0)                         // je exit
	a.ref("wait", rel8)                     //
	a.emit(0xeb, 0)                         // jmp wait           (an error such as EINTR)
	a.label("exit")                         // exit:
	a.emit(0xb8)                            // mov eax, imm32
	a.emit(le32(amd64SysExitGroup)...)      //   231
	a.emit(0x31, 0xff)                      // xor edi, edi       (status 0)
	a.emit(0x0f, 0x05)                      // syscall            (does not return)
	a.align(8)                              //
	a.label("allset")                       // allset:
	a.quad(allSet)                          //   .quad -1
	a.label("waitset")                      // waitset:
	a.quad(waitSet)                         //   .quad INT|TERM|CHLD
	return a.assemble()
}

func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

// rel8 patches a 2-byte short jump: its displacement byte counts from the
// end of the instruction.
func rel8(ins []byte, disp int) {
	d := disp - 2
	if d < -128 || d > 127 {
		panic(fmt.Sprintf("pause: short jump out of range (%d)", d))
	}
	ins[1] = byte(int8(d))
}

// rel32 patches the 32-bit RIP-relative displacement at byte field of an
// instruction of length n: it counts from the end of the instruction.
func rel32(field, n int) func([]byte, int) {
	return func(ins []byte, disp int) {
		binary.LittleEndian.PutUint32(ins[field:], uint32(int32(disp-n)))
	}
}
