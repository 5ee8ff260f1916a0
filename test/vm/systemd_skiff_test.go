package vm

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// skiffArtifacts returns bin/skiff and the busybox image archive for the
// skiff tests in the systemd VM: $SKIFF_BIN and $SKIFF_IMAGES, else the
// repository's bin/skiff (make build) and _output/images (make images).
func skiffArtifacts(t *testing.T) (bin, busybox string) {
	t.Helper()
	bin = os.Getenv("SKIFF_BIN")
	if bin == "" {
		bin = "../../bin/skiff"
	}
	images := os.Getenv("SKIFF_IMAGES")
	if images == "" {
		images = "../../_output/images"
	}
	busybox = filepath.Join(images, "busybox.tar")
	for _, f := range []string{bin, busybox} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%v: run make build images (or set SKIFF_BIN and SKIFF_IMAGES)", err)
		}
	}
	return bin, busybox
}

// skiffStaticPodScript starts skiff.service and waits for the static pod
// vm-sleeper to be Running, with skiff.service active all along.
const skiffStaticPodScript = `set -u
fail() {
	echo "FAIL: $*"
	journalctl -u skiff.service --no-pager | tail -n 60
	exit 1
}
systemctl start skiff.service || fail "systemctl start skiff.service"
i=0
until skiff pods --root-dir /var/lib/skiff 2>/dev/null | grep -q '^vm-sleeper-skiff-vm .*Running'; do
	systemctl is-active --quiet skiff.service || fail "skiff.service is $(systemctl is-active skiff.service)"
	i=$((i + 1))
	[ "$i" -le 150 ] || fail "pod vm-sleeper not Running after 300s"
	sleep 2
done
skiff pods --root-dir /var/lib/skiff
echo "skiff static pod: Running after about $((i * 2))s"
`

// TestSystemdVMSkiffStaticPod installs bin/skiff with a minimal Type=simple
// unit in the systemd VM and checks that its managed containerd runs a
// static pod there: the base of the skiff.service tests (issue 18).
func TestSystemdVMSkiffStaticPod(t *testing.T) {
	requireSystemdVM(t)
	bin, busybox := skiffArtifacts(t)
	runSystemdVM(t, SystemdOptions{
		Adds: []Add{
			{Host: bin, Guest: "/usr/local/bin/skiff"},
			{Host: busybox, Guest: "/var/lib/skiff/images/busybox.tar"},
			{Host: "testdata/skiff-simple.service", Guest: "/etc/systemd/system/skiff.service"},
			{Host: "testdata/vm-sleeper.yaml", Guest: "/etc/skiff/manifests/vm-sleeper.yaml"},
		},
		Command: []string{"sh", "-c", skiffStaticPodScript},
		Timeout: 12 * time.Minute,
	})
}
