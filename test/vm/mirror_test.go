package vm

import "testing"

func TestAptSourceMirror(t *testing.T) {
	tests := []struct {
		name, data, want string
		deb822           bool
	}{
		{name: "one-line", data: "# c\ndeb-src http://src/ bookworm main\ndeb [arch=amd64 signed-by=/k.gpg] http://m/debian bookworm main\n", want: "http://m/debian"},
		{name: "one-line other suite", data: "deb http://m/debian-security bookworm-security main\n"},
		{name: "deb822", deb822: true, want: "http://deb.debian.org/debian",
			data: "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\nTypes: deb\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\n"},
		{name: "deb822 disabled", deb822: true, data: "Enabled: no\nTypes: deb\nURIs: http://x/\nSuites: bookworm\n"},
		{name: "deb822 deb-src only", deb822: true, data: "Types: deb-src\nURIs: http://x/\nSuites: bookworm\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := oneLineMirror(tt.data, "bookworm")
			if tt.deb822 {
				got = deb822Mirror(tt.data, "bookworm")
			}
			if got != tt.want {
				t.Errorf("mirror %q, want %q", got, tt.want)
			}
		})
	}
}
