package nodeshutdown

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

func TestWriteDropIn_H17(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logind.conf.d")
	if err := WriteDropIn(dir, 30500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "99-skiff.conf"))
	if err != nil {
		t.Fatal(err)
	}
	want := "# skiff: graceful node shutdown needs logind to wait this long\n[Login]\nInhibitDelayMaxSec=31\n"
	if string(b) != want {
		t.Errorf("drop-in:\n%s\nwant:\n%s", b, want)
	}
}

func TestShutdownSignal_H17(t *testing.T) {
	tests := []struct {
		name       string
		s          *dbus.Signal
		active, ok bool
	}{
		{"shutdown", &dbus.Signal{Name: "org.freedesktop.login1.Manager.PrepareForShutdown", Body: []any{true}}, true, true},
		{"cancelled", &dbus.Signal{Name: "org.freedesktop.login1.Manager.PrepareForShutdown", Body: []any{false}}, false, true},
		{"other signal", &dbus.Signal{Name: "org.freedesktop.login1.Manager.PrepareForSleep", Body: []any{true}}, false, false},
		{"empty body", &dbus.Signal{Name: "org.freedesktop.login1.Manager.PrepareForShutdown"}, false, false},
		{"nil (connection closing)", nil, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			active, ok := shutdownSignal(tt.s)
			if active != tt.active || ok != tt.ok {
				t.Errorf("shutdownSignal = %v, %v; want %v, %v", active, ok, tt.active, tt.ok)
			}
		})
	}
}
