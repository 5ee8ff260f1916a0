package procfs

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const ioFile = `rchar: 8765432
wchar: 123456
syscr: 4321
syscw: 210
read_bytes: 4096
write_bytes: 20480
cancelled_write_bytes: 4096
`

func TestParseIO(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       IO
		wantErr    string
	}{
		{"a process", ioFile, IO{WChar: 123456, WriteBytes: 20480, CancelledWriteBytes: 4096}, ""},
		{"order and spaces do not matter", "cancelled_write_bytes:0\nwrite_bytes:   8192\nwchar: 1\n", IO{WChar: 1, WriteBytes: 8192}, ""},
		{"no io accounting", "rchar: 1\nwchar: 2\n", IO{}, "1 of the 3 fields"},
		{"empty", "", IO{}, "0 of the 3 fields"},
		{"bad number", strings.Replace(ioFile, "20480", "20x", 1), IO{}, "write_bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseIO(tc.data)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseIO = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestIOSince(t *testing.T) {
	a := IO{WChar: 10, WriteBytes: 4096, CancelledWriteBytes: 0}
	b := IO{WChar: 30, WriteBytes: 12288, CancelledWriteBytes: 4096}
	d, err := b.Since(a)
	if want := (IO{WChar: 20, WriteBytes: 8192, CancelledWriteBytes: 4096}); err != nil || d != want {
		t.Fatalf("Since = %+v, %v; want %+v", d, err, want)
	}
	if _, err := a.Since(b); err == nil {
		t.Fatal("Since of a counter that went back: no error")
	}
	if got := a.Plus(b); got != (IO{WChar: 40, WriteBytes: 16384, CancelledWriteBytes: 4096}) {
		t.Fatalf("Plus = %+v", got)
	}
}

func TestIOTracker(t *testing.T) {
	w := func(n uint64) IO { return IO{WriteBytes: n} }
	for _, tc := range []struct {
		name    string
		samples []map[int]IO
		want    uint64
		procs   int
	}{
		{"none", nil, 0, 0},
		{"one sample counts nothing", []map[int]IO{{1: w(4096)}}, 0, 1},
		{"from the first sample", []map[int]IO{{1: w(4096), 2: w(100)}, {1: w(8192), 2: w(100)}}, 4096, 2},
		{"a process born in the window counts from zero", []map[int]IO{{1: w(0)}, {1: w(0), 3: w(4096)}, {1: w(0), 3: w(12288)}}, 12288, 2},
		{"an exited one counts until its last sample", []map[int]IO{{1: w(0), 2: w(4096)}, {1: w(0), 2: w(8192)}, {1: w(4096)}}, 8192, 2},
		{"a reused pid counts the new process from zero", []map[int]IO{{5: w(100000)}, {5: w(104096)}, {5: w(4096)}}, 4096, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tr IOTracker
			for _, s := range tc.samples {
				tr.Add(s)
			}
			got, n := tr.Total()
			if got.WriteBytes != tc.want || n != tc.procs {
				t.Fatalf("Total = %d bytes from %d processes, want %d from %d", got.WriteBytes, n, tc.want, tc.procs)
			}
		})
	}
}

func TestShimIOAndPidsWithArg(t *testing.T) {
	root := t.TempDir()
	proc := func(pid, cmdline, io string) {
		dir := filepath.Join(root, pid)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, data := range map[string]string{"cmdline": cmdline, "io": io} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	sock := "/b/external/containerd.sock"
	proc("10", "/usr/bin/containerd-shim-runc-v2\x00-namespace\x00k8s.io\x00-address\x00"+sock+"\x00", ioFile)
	proc("11", "/usr/bin/containerd-shim-runc-v2\x00-address\x00/other.sock\x00", ioFile)
	proc("12", "etcd\x00--name=default\x00--data-dir=/b/cluster/etcd\x00", ioFile)
	proc("13", "/usr/bin/containerd-shim-runc-v2\x00-address\x00"+sock+"\x00", "no io here")
	if err := os.MkdirAll(filepath.Join(root, "self"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := ShimIO(root, sock)
	if err != nil || len(got) != 1 || got[10].WriteBytes != 20480 {
		t.Fatalf("ShimIO = %+v, %v; want pid 10 only (13's io is unreadable)", got, err)
	}
	pids, err := PidsWithArg(root, "--data-dir=/b/cluster/etcd")
	if err != nil || !slices.Equal(pids, []int{12}) {
		t.Fatalf("PidsWithArg = %v, %v; want [12]", pids, err)
	}
	if pids, _ := PidsWithArg(root, "etcd"); len(pids) != 0 {
		t.Fatalf("PidsWithArg matched the executable: %v", pids)
	}
}

func TestParseBlockStat(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       uint64
		wantErr    bool
	}{
		{"a disk (17 fields)", " 1901245   158821 79401482  1828143  2355723  1026226 126763960  1005709        0   389212  2960552   564866      140 100377968    81795   440829    44903\n", 126763960, false},
		{"an old kernel (11 fields)", "10 0 80 5 20 0 160 9 0 14 14\n", 160, false},
		{"too short", "1 2 3 4 5 6 7\n", 0, true},
		{"bad number", "1 2 3 4 5 6 x 8 9 10 11\n", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseBlockStat(tc.data)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("ParseBlockStat = %d, %v; want %d (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestBlockDevOf(t *testing.T) {
	// The device of a temporary directory on this machine; where that
	// filesystem is on no block device (tmpfs) the error says so.
	d, err := BlockDevOf("/sys", t.TempDir())
	if err != nil {
		t.Skipf("no block device here: %v", err)
	}
	if d.Name == "" {
		t.Fatalf("BlockDevOf = %+v: no name", d)
	}
	if _, err := d.BytesWritten(); err != nil {
		t.Fatalf("BytesWritten: %v", err)
	}
	if _, err := (BlockDev{}).BytesWritten(); err == nil {
		t.Fatal("BytesWritten without a stat file: no error")
	}
}

func TestFSTypeOf(t *testing.T) {
	mi := strings.Join([]string{
		"22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard",
		"30 22 0:26 / /tmp rw shared:5 - tmpfs tmpfs rw",
		"31 30 254:16 / /tmp/data rw shared:6 - xfs /dev/vdb rw",
		"32 22 0:27 / /tmp\\040x rw shared:7 - btrfs /dev/vdc rw",
		"40 22 0:28 / /var rw - ext4 /dev/vdd rw",
		"41 22 0:29 / /var rw - overlay overlay rw",
		"garbage",
	}, "\n")
	for _, tc := range []struct{ path, want string }{
		{"/tmp/sb-1/external", "tmpfs"},
		{"/tmp/data/x", "xfs"},
		{"/tmp/datax", "tmpfs"},
		{"/tmp x/y", "btrfs"},
		{"/work/main", "ext4"},
		{"/var/lib/skiff", "overlay"},
	} {
		if got := FSTypeOf(mi, tc.path); got != tc.want {
			t.Errorf("FSTypeOf(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
	if got := FSTypeOf("", "/x"); got != "" {
		t.Errorf("FSTypeOf without mounts = %q", got)
	}
}

func TestExt4Journal(t *testing.T) {
	root := t.TempDir()
	for name, task := range map[string]string{"vda": "<none>\n", "vdb": "jbd2/vdb-8\n"} {
		dir := filepath.Join(root, "fs", "ext4", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "journal_task"), []byte(task), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mi := "22 1 254:0 / / rw - ext4 /dev/vda rw\n23 22 254:16 / /data rw - ext4 /dev/vdb rw\n24 22 0:30 / /x rw - xfs /dev/vdc rw\n"
	for _, tc := range []struct {
		path string
		dev  BlockDev
		want string
	}{
		{"/tmp", BlockDev{Name: "vda"}, "ext4, no journal"},
		{"/data/y", BlockDev{Name: "vdb"}, "ext4 with a journal"},
		{"/data/y", BlockDev{Name: "vdz"}, "ext4"},
		{"/x", BlockDev{Name: "vdc"}, "xfs"},
		{"/tmp", BlockDev{}, "ext4"},
	} {
		if got := DescribeFS(root, mi, tc.path, tc.dev); got != tc.want {
			t.Errorf("DescribeFS(%q, %q) = %q, want %q", tc.path, tc.dev.Name, got, tc.want)
		}
	}
}
