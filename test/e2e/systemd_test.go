package e2e

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skiffnode/skiff/runtime"
)

// notifyMsg is one sd_notify datagram: its text, its sender's pid (the
// kernel's SCM_CREDENTIALS, as systemd checks NotifyAccess=main) and when
// it arrived.
type notifyMsg struct {
	text string
	pid  int
	at   time.Time
}

// notifySocket is a fake systemd NOTIFY_SOCKET that records every
// datagram; onReady runs in the reader when a READY=1 arrives.
type notifySocket struct {
	path    string
	conn    *net.UnixConn
	onReady func()

	mu   sync.Mutex
	msgs []notifyMsg
	done chan struct{}
}

func listenNotify(t *testing.T, dir string, onReady func()) *notifySocket {
	t.Helper()
	path := filepath.Join(dir, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := conn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PASSCRED, 1) }); err != nil || serr != nil {
		t.Fatalf("SO_PASSCRED: %v %v", err, serr)
	}
	n := &notifySocket{path: path, conn: conn, onReady: onReady, done: make(chan struct{})}
	go n.read()
	t.Cleanup(func() { _ = conn.Close(); <-n.done })
	return n
}

func (n *notifySocket) read() {
	defer close(n.done)
	buf, oob := make([]byte, 4096), make([]byte, unix.CmsgSpace(unix.SizeofUcred))
	for {
		l, oobn, _, _, err := n.conn.ReadMsgUnix(buf, oob)
		if err != nil {
			return
		}
		m := notifyMsg{text: string(buf[:l]), at: time.Now()}
		if cms, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil && len(cms) > 0 {
			if cred, err := unix.ParseUnixCredentials(&cms[0]); err == nil {
				m.pid = int(cred.Pid)
			}
		}
		if hasLine(m.text, "READY=1") && n.onReady != nil {
			n.onReady()
		}
		n.mu.Lock()
		n.msgs = append(n.msgs, m)
		n.mu.Unlock()
	}
}

func hasLine(text, line string) bool { return slices.Contains(strings.Split(text, "\n"), line) }

// wait returns the first message from index from on for which ok holds.
func (n *notifySocket) wait(t *testing.T, from int, what string, ok func(string) bool) (notifyMsg, int) {
	t.Helper()
	var found notifyMsg
	idx := -1
	eventually(t, agentStartTimeout, func() (bool, string) {
		n.mu.Lock()
		defer n.mu.Unlock()
		for i := from; i < len(n.msgs); i++ {
			if ok(n.msgs[i].text) {
				found, idx = n.msgs[i], i
				return true, ""
			}
		}
		return false, "no sd_notify message with " + what + " yet; got " + strconv.Itoa(len(n.msgs)) + " messages"
	})
	return found, idx
}

// checkSenders fails for a message that did not come from pid: the
// managed containerd speaks sd_notify too and must not inherit
// NOTIFY_SOCKET.
func (n *notifySocket) checkSenders(t *testing.T, pid int, from, to int) {
	t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, m := range n.msgs[from:min(to, len(n.msgs))] {
		if m.pid != pid {
			t.Errorf("sd_notify message %q from pid %d, want only the agent's (%d)", m.text, m.pid, pid)
		}
	}
}

func (n *notifySocket) count() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.msgs)
}

// skiff as a Type=notify service (issue 18): READY=1 comes from the agent
// itself, only once the static pods are listed; STATUS= counts the running
// pods; SIGTERM sends STOPPING=1 and leaves the containers running; the
// next agent re-adopts them and is READY again.
func TestSystemdNotifyReadyStoppingAndReadoption_A2_A3(t *testing.T) {
	e := NewEnv(t)
	names := []string{"sd-a", "sd-b"}
	for _, n := range names {
		e.WriteManifest(t, n+".yaml", twoContainerPod(n))
	}
	// At READY=1 the agent's API must list every static pod.
	var podsAtReady [][]string
	var readyMu sync.Mutex
	sock := listenNotify(t, e.Dir, func() {
		var got []string
		if l, err := e.Pods(); err == nil {
			for _, p := range l.Items {
				got = append(got, p.Name)
			}
		}
		readyMu.Lock()
		podsAtReady = append(podsAtReady, got)
		readyMu.Unlock()
	})
	env := []string{"NOTIFY_SOCKET=" + sock.path}

	start := time.Now()
	e.StartAgent(t, AgentOptions{Env: env})
	pid := e.agent.cmd.Process.Pid
	ready, _ := sock.wait(t, 0, "READY=1", func(s string) bool { return hasLine(s, "READY=1") })
	t.Logf("start -> READY=1: %s with %d static pods (%q)", ready.at.Sub(start).Round(time.Millisecond), len(names), ready.text)
	readyMu.Lock()
	for _, n := range names {
		if len(podsAtReady) == 0 || !slices.Contains(podsAtReady[0], PodName(n)) {
			t.Errorf("at READY=1 the agent listed %v; want every static pod (%s)", podsAtReady, PodName(n))
		}
	}
	readyMu.Unlock()

	containers := map[string][]string{}
	for _, n := range names {
		p := e.WaitForPod(t, PodName(n), runningAndReady, podStartTimeout)
		containers[n] = idSet(e.Containers(t, uidLabels(string(p.UID))))
	}
	shims := shimPIDs()
	if len(shims) == 0 {
		t.Fatal("no containerd shim runs with the pods running")
	}
	sock.wait(t, 0, "STATUS=2/2 pods running", func(s string) bool { return hasLine(s, "STATUS=2/2 pods running") })
	if st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status"); err == nil {
		for _, l := range strings.Split(string(st), "\n") {
			if strings.HasPrefix(l, "VmRSS:") {
				t.Logf("agent %s with %d pods running", strings.Join(strings.Fields(l), " "), len(names))
			}
		}
	}

	// SIGTERM, as systemctl stop with KillMode=process sends it.
	before := sock.count()
	e.StopAgent(t)
	sock.wait(t, before, "STOPPING=1", func(s string) bool { return hasLine(s, "STOPPING=1") })
	sock.checkSenders(t, pid, 0, sock.count())
	// The shims (one per group of pods) outlive the agent: the pods keep
	// running.
	if after := shimPIDs(); !slices.Equal(after, shims) {
		t.Errorf("containerd shims %v after the agent stopped, want the same as before %v: the pods must keep running", after, shims)
	}

	// The next agent (systemd's restart) re-adopts the pods.
	before = sock.count()
	start = time.Now()
	e.StartAgent(t, AgentOptions{Env: env})
	pid = e.agent.cmd.Process.Pid
	ready, _ = sock.wait(t, before, "READY=1", func(s string) bool { return hasLine(s, "READY=1") })
	t.Logf("restart -> READY=1: %s with %d running static pods", ready.at.Sub(start).Round(time.Millisecond), len(names))
	for _, n := range names {
		p := e.WaitForPod(t, PodName(n), runningAndReady, podStartTimeout)
		cs := e.Containers(t, uidLabels(string(p.UID)))
		if got := idSet(cs); !slices.Equal(got, containers[n]) {
			t.Errorf("%s: containers after the restart %v, want the same as before %v", n, got, containers[n])
		}
		for _, c := range cs {
			if c.State != runtime.ContainerRunning {
				t.Errorf("%s: container %s is %s after the restart", n, c.Name, c.State)
			}
		}
		for _, st := range p.Status.ContainerStatuses {
			if st.RestartCount != 0 {
				t.Errorf("%s: %s restartCount %d after the restart, want 0", n, st.Name, st.RestartCount)
			}
		}
	}
	sock.checkSenders(t, pid, before, sock.count())
}

// shimPIDs are the pids of the containerd-shim-runc-v2 processes running,
// ascending.
func shimPIDs() []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if args := strings.Split(string(cmdline), "\x00"); strings.Contains(args[0], "containerd-shim") {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids
}
