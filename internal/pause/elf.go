package pause

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
)

// Executable returns skiff's built-in pause executable for goarch
// ("amd64" or "arm64") and true, or nil and false for other architectures.
// It is a minimal static ELF (no libc, no Go runtime, a few hundred bytes)
// whose machine code does what Run does:
//
//  1. rt_sigprocmask(SIG_BLOCK, all signals): signals are queued rather
//     than acted on. A blocked signal is never ignored, not even by the
//     init of a PID namespace, which the kernel otherwise spares every
//     signal without a handler; sigwait therefore works without handlers
//     (catatonit and tini do the same).
//  2. reap: wait4(-1, NULL, WNOHANG, NULL) until it returns <= 0 (no more
//     exited children, or none at all), which also collects children that
//     exited before the mask was set.
//  3. rt_sigtimedwait({SIGINT, SIGTERM, SIGCHLD}, NULL, NULL): SIGCHLD goes
//     back to 2 (one SIGCHLD may stand for several exits); SIGINT or
//     SIGTERM ends the process with exit_group(0); anything else (an
//     error) waits again.
//
// The bytes are the same for every call of one skiff build, so the pause
// image built from them keeps its tag. Pure; safe for concurrent use.
func Executable(goarch string) ([]byte, bool) {
	switch goarch {
	case "amd64":
		return buildELF(elf.EM_X86_64, amd64Code()), true
	case "arm64":
		return buildELF(elf.EM_AARCH64, arm64Code()), true
	}
	return nil, false
}

// Linux signal numbers and syscall arguments shared by both architectures.
const (
	sigINT  = 2
	sigTERM = 15
	sigCHLD = 17
	// waitSet is the kernel sigset_t (bit n-1 for signal n) of the signals
	// the loop waits for.
	waitSet = 1<<(sigINT-1) | 1<<(sigTERM-1) | 1<<(sigCHLD-1)
	// allSet blocks every signal; the kernel silently keeps SIGKILL and
	// SIGSTOP unblocked.
	allSet    = ^uint64(0)
	sigBlock  = 0 // rt_sigprocmask's how
	wNoHang   = 1 // wait4 option
	sigsetLen = 8 // the kernel's sizeof(sigset_t)
)

// ELF layout: one read+execute PT_LOAD segment maps the whole file (header,
// program headers, code, then the two sigsets) at loadAddr; a PT_GNU_STACK
// header asks for a non-executable stack.
const (
	loadAddr  = 0x400000
	ehdrSize  = 64
	phdrSize  = 56
	numPhdrs  = 2
	codeStart = ehdrSize + numPhdrs*phdrSize // 176, a multiple of 8
	// segAlign is 64 KiB so that arm64 kernels with 64 KiB pages load it.
	segAlign = 0x10000
)

// buildELF wraps code (which starts at the entry point, file offset
// codeStart) into an executable ELF64 little-endian file for machine.
func buildELF(machine elf.Machine, code []byte) []byte {
	size := uint64(codeStart + len(code))
	hdr := elf.Header64{
		Type:      uint16(elf.ET_EXEC),
		Machine:   uint16(machine),
		Version:   uint32(elf.EV_CURRENT),
		Entry:     loadAddr + codeStart,
		Phoff:     ehdrSize,
		Ehsize:    ehdrSize,
		Phentsize: phdrSize,
		Phnum:     numPhdrs,
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	hdr.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	hdr.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	hdr.Ident[elf.EI_OSABI] = byte(elf.ELFOSABI_NONE)
	progs := []elf.Prog64{{
		Type: uint32(elf.PT_LOAD), Flags: uint32(elf.PF_R | elf.PF_X),
		Off: 0, Vaddr: loadAddr, Paddr: loadAddr,
		Filesz: size, Memsz: size, Align: segAlign,
	}, {
		Type: uint32(elf.PT_GNU_STACK), Flags: uint32(elf.PF_R | elf.PF_W),
		Align: 16,
	}}
	var b bytes.Buffer
	// Writes to a bytes.Buffer of fixed-size structs cannot fail.
	_ = binary.Write(&b, binary.LittleEndian, &hdr)
	_ = binary.Write(&b, binary.LittleEndian, progs)
	b.Write(code)
	return b.Bytes()
}

// asm is a tiny assembler: it appends encoded instructions and patches
// label references once every label is known. Offsets are relative to the
// start of the code.
type asm struct {
	code   []byte
	labels map[string]int
	fixups []fixup
}

// fixup patches the instruction at offset at, which refers to label, with
// patch(instruction bytes, displacement label-at).
type fixup struct {
	at    int
	label string
	patch func(ins []byte, disp int)
}

func newAsm() *asm { return &asm{labels: map[string]int{}} }

func (a *asm) label(name string) { a.labels[name] = len(a.code) }

func (a *asm) emit(b ...byte) { a.code = append(a.code, b...) }

// ref records that the instruction starting at the current offset refers
// to label; emit the instruction right after.
func (a *asm) ref(label string, patch func(ins []byte, disp int)) {
	a.fixups = append(a.fixups, fixup{at: len(a.code), label: label, patch: patch})
}

// align pads the code with zeros to a multiple of n bytes.
func (a *asm) align(n int) {
	for len(a.code)%n != 0 {
		a.code = append(a.code, 0)
	}
}

func (a *asm) quad(v uint64) { a.code = binary.LittleEndian.AppendUint64(a.code, v) }

// assemble resolves the fixups and returns the code. An unknown label is a
// bug in this file: it panics.
func (a *asm) assemble() []byte {
	for _, f := range a.fixups {
		to, ok := a.labels[f.label]
		if !ok {
			panic("pause: unknown label " + f.label)
		}
		f.patch(a.code[f.at:], to-f.at)
	}
	return a.code
}
