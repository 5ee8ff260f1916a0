package vm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Machine is one qemu run: a kernel and an initramfs booted headless with
// the serial console on qemu's stdout.
type Machine struct {
	// QEMU is the emulator (default qemu-system-x86_64).
	QEMU string
	// Kernel and Initrd are the files to boot (Initrd may be empty when
	// the root is on a disk).
	Kernel, Initrd string
	// Cmdline replaces BaseCmdline when not nil (Append still follows).
	Cmdline []string
	// Disks are raw disk images attached as the namespaces of one NVMe
	// controller, in order: /dev/nvme0n1, /dev/nvme0n2, ... (the cloud
	// kernel has NVMe built in, virtio-blk only as a module, and one
	// controller keeps the names stable).
	Disks []Disk
	// MemoryMiB is the guest RAM (default 3072); the root file system lives
	// in it.
	MemoryMiB int
	// CPUs is the number of virtual CPUs (default 2).
	CPUs int
	// Accel is qemu's -accel (default tcg: KVM is not available on CI).
	Accel string
	// CPU is qemu's -cpu (default max).
	CPU string
	// Append holds extra kernel command-line arguments.
	Append []string
	// UserNet gives the guest a virtio NIC on qemu's user-mode network
	// (10.0.2.0/24): the guest reaches the host's loopback services at
	// 10.0.2.2 (e.g. an API server on 127.0.0.1), and nothing else.
	UserNet bool
	// Timeout bounds the whole run; qemu is killed when it passes.
	Timeout time.Duration
	// BootTimeout, when set, kills the guest if it has not printed its
	// boot marker by then.
	BootTimeout time.Duration
	// PowerOffGrace is how long the guest may take to power off after its
	// result marker before qemu is killed (default 30s).
	PowerOffGrace time.Duration
	// Nonce is the tag of the guest's marker lines (see Image.Nonce).
	Nonce string
	// Console receives the serial console as it comes (may be nil); Log,
	// if set, is a file that receives it too.
	Console io.Writer
	Log     string
}

// Disk is a raw disk image for Machine.Disks.
type Disk struct {
	// File is the image.
	File string
	// Snapshot discards the guest's writes (qemu keeps them in a temporary
	// file), so File stays as it was.
	Snapshot bool
}

// BaseCmdline is the kernel command line before Machine.Append: serial
// console, quiet, reboot (so qemu exits, with -no-reboot) on panic, cgroup
// v2 only, no speculative-execution mitigations (slow under TCG, pointless
// in a throwaway VM), and the TSC as clock source: without tsc=reliable the
// kernel distrusts TCG's TSC and falls back to the emulated HPET, which makes
// every clock read a trap (Go programs read the clock constantly).
var BaseCmdline = []string{
	"console=ttyS0", "quiet", "panic=-1", "cgroup_no_v1=all", "mitigations=off",
	"printk.devkmsg=on", "rdinit=/init", "tsc=reliable",
}

// Result is what a run reports.
type Result struct {
	// Found says whether the guest printed its result marker; RC and
	// Reason are only meaningful then.
	Found bool
	// RC is the command's exit status (124 when the guest timed it out).
	RC int
	// Reason is "timeout" when the guest killed the command, "setup" when
	// the guest could not prepare itself, else "".
	Reason string
	// Booted is the time from starting qemu until the guest was ready to
	// run the command (zero if it never got there); BootLine is the guest's
	// boot marker line (uptime, cgroup file system and controllers).
	Booted   time.Duration
	BootLine string
	// Boot is BootLine parsed.
	Boot BootInfo
	// Panic is the guest kernel's panic line, if it panicked.
	Panic string
	// Total is the time qemu ran.
	Total time.Duration
	// Finished is the time from starting qemu until the result marker;
	// Total less Finished is how long the guest took to power off.
	Finished time.Duration
	// PowerOffKilled says that qemu was killed because the guest did not
	// power off within Machine.PowerOffGrace after its result.
	PowerOffKilled bool
	// Tail holds the last console lines, for error messages.
	Tail []string
}

// markerRE matches the guest's marker lines (see guest/stage2.sh).
var markerRE = regexp.MustCompile(`SKIFF-VM-(BOOTED|RESULT) (\S+) (.*)$`)

// resultRE parses the fields of a RESULT marker.
var resultRE = regexp.MustCompile(`^rc=(\d+)(?: reason=(\S+))?`)

// ErrNoResult means the guest stopped without printing its result marker:
// it panicked, did not boot, or qemu failed or timed out.
var ErrNoResult = errors.New("the VM ended without a result marker")

// Run boots the machine, streams its console, and returns when qemu has
// exited. It fails with ErrNoResult (wrapped, with the console tail) when
// the guest reported no result.
func (m Machine) Run(ctx context.Context) (*Result, error) {
	m = m.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, m.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, m.QEMU, m.args()...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	// qemu must not own the terminal: stdin is /dev/null.
	cmd.Stdin = nil
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	watch := &consoleWatcher{nonce: m.Nonce, start: time.Now(), booted: make(chan struct{}), result: make(chan struct{})}
	outs := []io.Writer{watch}
	if m.Console != nil {
		outs = append(outs, m.Console)
	}
	if m.Log != "" {
		f, err := os.Create(m.Log)
		if err != nil {
			return nil, fmt.Errorf("console log: %w", err)
		}
		defer f.Close()
		outs = append(outs, f)
	}
	cmd.Stdout = io.MultiWriter(outs...)
	watch.start = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", m.QEMU, err)
	}
	// After the result the guest powers off within seconds; do not let a
	// hung power-off keep the caller waiting.
	done := make(chan struct{})
	killed := make(chan string, 1)
	go func() {
		killed <- m.guard(cmd, watch, done)
	}()
	waitErr := cmd.Wait()
	close(done)
	why := <-killed
	res := watch.finish(time.Since(watch.start))
	res.PowerOffKilled = why == killedPowerOff
	if res.Found {
		return res, nil
	}
	if why == "" {
		why = "qemu exited"
	}
	switch {
	case why == killedBoot:
	case res.Panic != "":
		why = "guest kernel panic"
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		why = fmt.Sprintf("timed out after %s", m.Timeout)
	case waitErr != nil:
		why = fmt.Sprintf("qemu failed: %v", waitErr)
	}
	msg := strings.TrimSpace(stderr.String())
	if msg != "" {
		msg = "\nqemu stderr: " + msg
	}
	return res, fmt.Errorf("%w (%s); last console lines:\n%s%s", ErrNoResult, why, strings.Join(res.Tail, "\n"), msg)
}

// args returns qemu's command line.
func (m Machine) args() []string {
	cmdline := m.Cmdline
	if cmdline == nil {
		cmdline = BaseCmdline
	}
	args := []string{
		"-accel", m.Accel, "-cpu", m.CPU, "-m", strconv.Itoa(m.MemoryMiB), "-smp", strconv.Itoa(m.CPUs),
		"-nodefaults", "-no-user-config", "-display", "none", "-monitor", "none", "-serial", "stdio",
		"-no-reboot", "-kernel", m.Kernel,
		"-append", strings.Join(append(append([]string{}, cmdline...), m.Append...), " "),
	}
	if m.Initrd != "" {
		args = append(args, "-initrd", m.Initrd)
	}
	if len(m.Disks) > 0 {
		args = append(args, "-device", "nvme,id=nvme0,serial=skiffvm")
	}
	if m.UserNet {
		args = append(args, "-netdev", "user,id=net0", "-device", "virtio-net-pci,netdev=net0")
	}
	for i, d := range m.Disks {
		drive := fmt.Sprintf("file=%s,if=none,id=disk%d,format=raw,cache=unsafe", qemuEscape(d.File), i)
		if d.Snapshot {
			drive += ",snapshot=on"
		}
		args = append(args, "-drive", drive, "-device", fmt.Sprintf("nvme-ns,drive=disk%d,bus=nvme0,nsid=%d", i, i+1))
	}
	return args
}

// qemuEscape doubles the commas of a -drive option value.
func qemuEscape(s string) string { return strings.ReplaceAll(s, ",", ",,") }

// Reasons guard gives for killing qemu.
const (
	killedBoot     = "no boot marker within the boot timeout"
	killedPowerOff = "no power-off after the result"
)

// guard kills qemu when the guest does not boot within BootTimeout or does
// not power off within PowerOffGrace of its result, and says why; it
// returns "" when qemu exits (done) first.
func (m Machine) guard(cmd *exec.Cmd, watch *consoleWatcher, done <-chan struct{}) string {
	booted := watch.booted
	var bootTimer <-chan time.Time
	if m.BootTimeout > 0 {
		t := time.NewTimer(m.BootTimeout)
		defer t.Stop()
		bootTimer = t.C
	}
	for {
		select {
		case <-done:
			return ""
		case <-booted:
			bootTimer, booted = nil, nil
		case <-bootTimer:
			_ = cmd.Process.Kill()
			return killedBoot
		case <-watch.result:
			t := time.NewTimer(m.PowerOffGrace)
			defer t.Stop()
			select {
			case <-t.C:
				_ = cmd.Process.Kill()
				return killedPowerOff
			case <-done:
				return ""
			}
		}
	}
}

func (m Machine) withDefaults() Machine {
	if m.QEMU == "" {
		m.QEMU = "qemu-system-x86_64"
	}
	if m.MemoryMiB == 0 {
		m.MemoryMiB = 3072
	}
	if m.CPUs == 0 {
		m.CPUs = 2
	}
	if m.Accel == "" {
		m.Accel = "tcg"
	}
	if m.CPU == "" {
		m.CPU = "max"
	}
	if m.Timeout == 0 {
		m.Timeout = 15 * time.Minute
	}
	if m.PowerOffGrace == 0 {
		m.PowerOffGrace = 30 * time.Second
	}
	return m
}

// tailLines is how many console lines Result.Tail keeps.
const tailLines = 40

// consoleWatcher is the io.Writer that sees the console: it splits lines,
// keeps the tail and recognizes the marker lines carrying its nonce.
type consoleWatcher struct {
	nonce string
	start time.Time

	mu      sync.Mutex
	partial []byte
	res     Result
	booted  chan struct{} // closed when the BOOTED marker is seen
	result  chan struct{} // closed when the RESULT marker is seen
}

func (w *consoleWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	data := append(w.partial, p...)
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		w.line(strings.TrimRight(string(data[:i]), "\r"))
		data = data[i+1:]
	}
	// Keep an unfinished line, but not without bound.
	if len(data) > 64<<10 {
		w.line(string(data))
		data = nil
	}
	w.partial = append(w.partial[:0], data...)
	return len(p), nil
}

// line handles one complete console line.
func (w *consoleWatcher) line(s string) {
	w.res.Tail = append(w.res.Tail, s)
	if len(w.res.Tail) > tailLines {
		w.res.Tail = w.res.Tail[len(w.res.Tail)-tailLines:]
	}
	if w.res.Panic == "" && strings.Contains(s, "Kernel panic - not syncing") {
		w.res.Panic = s
	}
	m := findMarker(s, w.nonce)
	if m == nil {
		return
	}
	switch m[1] {
	case "BOOTED":
		if w.res.Booted == 0 {
			w.res.Booted = time.Since(w.start)
			w.res.BootLine = s
			// A malformed field leaves the rest parsed; the line is kept.
			w.res.Boot, _ = ParseBootFields(m[3])
			if w.booted != nil {
				close(w.booted)
			}
		}
	case "RESULT":
		f := resultRE.FindStringSubmatch(m[3])
		if f == nil || w.res.Found {
			return
		}
		rc, err := strconv.Atoi(f[1])
		if err != nil {
			return
		}
		w.res.Found, w.res.RC, w.res.Reason = true, rc, f[2]
		w.res.Finished = time.Since(w.start)
		close(w.result)
	}
}

// findMarker returns the submatches of markerRE for the last marker with
// nonce in line: a kernel message may be printed into the middle of a
// marker line on the serial console ("SKIFF-VM-RESULT [ 9.1] ... n0nce rc=0").
func findMarker(line, nonce string) []string {
	for i := len(line); i >= 0; {
		i = strings.LastIndex(line[:i], "SKIFF-VM-")
		if i < 0 {
			return nil
		}
		if m := markerRE.FindStringSubmatch(line[i:]); m != nil && m[2] == nonce {
			return m
		}
	}
	return nil
}

// finish flushes a last unterminated line and returns the result.
func (w *consoleWatcher) finish(total time.Duration) *Result {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.partial) > 0 {
		w.line(strings.TrimRight(string(w.partial), "\r"))
		w.partial = nil
	}
	res := w.res
	res.Tail = append([]string(nil), w.res.Tail...)
	res.Total = total
	return &res
}
