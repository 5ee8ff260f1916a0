package walkthrough

import (
	"regexp"
	"strings"
)

// The parts of kubectl's output that differ between any two runs.
var (
	uidRE       = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timeRE      = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z`)
	rvRE        = regexp.MustCompile(`(resourceVersion"?:\s*"?)\d+`)
	ageRE       = regexp.MustCompile(`(^|\s)(\d+[smhd])+(\s|$)`)
	generatedRE = regexp.MustCompile(`(generateName: \S+|name: \S+-|pod/\S+-|pod "\S+-)[a-z0-9]{5}\b`)
)

// normalize replaces UIDs, timestamps, resource versions and ages (the
// AGE column: 5s, 2m3s) with placeholders, and trims trailing spaces, so
// that the outputs of two API servers compare.
func normalize(out string) string {
	out = uidRE.ReplaceAllString(out, "<uid>")
	out = timeRE.ReplaceAllString(out, "<time>")
	out = rvRE.ReplaceAllString(out, "${1}<rv>")
	out = generatedRE.ReplaceAllString(out, "${1}<rand>")
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for i, l := range lines {
		// Twice: adjacent columns share the space between them.
		l = ageRE.ReplaceAllString(l, "${1}<age>${3}")
		l = ageRE.ReplaceAllString(l, "${1}<age>${3}")
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}
