package vm

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// aptSourcesGlobs are the host's apt source files, one-line (.list) and
// deb822 (.sources) style.
var aptSourcesGlobs = []string{"/etc/apt/sources.list", "/etc/apt/sources.list.d/*.list", "/etc/apt/sources.list.d/*.sources"}

// HostMirror returns the URI of the first "deb" source for suite in the
// host's apt sources (the mirror that is known to work on this machine),
// or "" when there is none. Unreadable files are skipped.
func HostMirror(suite string) string {
	for _, g := range aptSourcesGlobs {
		files, _ := filepath.Glob(g)
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			var uri string
			if strings.HasSuffix(f, ".sources") {
				uri = deb822Mirror(string(data), suite)
			} else {
				uri = oneLineMirror(string(data), suite)
			}
			if uri != "" {
				return uri
			}
		}
	}
	return ""
}

// oneLineMirror parses "deb [options] URI SUITE COMPONENTS..." lines.
func oneLineMirror(data, suite string) string {
	for _, line := range strings.Split(data, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "deb" {
			continue
		}
		i := 1
		if strings.HasPrefix(f[i], "[") {
			for i < len(f) && !strings.HasSuffix(f[i], "]") {
				i++
			}
			i++
		}
		if i+1 < len(f) && f[i+1] == suite {
			return f[i]
		}
	}
	return ""
}

// deb822Mirror parses paragraphs with Types:, URIs: and Suites: fields.
func deb822Mirror(data, suite string) string {
	for _, para := range strings.Split(data, "\n\n") {
		fields := map[string][]string{}
		for _, line := range strings.Split(para, "\n") {
			k, v, ok := strings.Cut(line, ":")
			if ok && !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, " ") {
				fields[strings.ToLower(strings.TrimSpace(k))] = strings.Fields(v)
			}
		}
		if enabled := fields["enabled"]; len(enabled) == 1 && enabled[0] == "no" {
			continue
		}
		if slices.Contains(fields["types"], "deb") && slices.Contains(fields["suites"], suite) && len(fields["uris"]) > 0 {
			return fields["uris"][0]
		}
	}
	return ""
}
