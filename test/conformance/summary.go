package main

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// junitSuites is the part of ginkgo's JUnit report the summary reads.
type junitSuites struct {
	Suites []struct {
		Cases []junitCase `xml:"testcase"`
	} `xml:"testsuite"`
}

type junitCase struct {
	Name    string `xml:"name,attr"`
	Status  string `xml:"status,attr"`
	Time    string `xml:"time,attr"`
	Failure *struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Body    string `xml:",chardata"`
	} `xml:"failure"`
	Error *struct {
		Message string `xml:"message,attr"`
	} `xml:"error"`
	Skipped *struct {
		Message string `xml:"message,attr"`
	} `xml:"skipped"`
}

// summarize reads the JUnit report and writes summary.md: counts of the
// specs the focus selected (passed, failed, skipped at run time, and not
// run: skipped by the focus or left when the suite timed out) and the
// failing tests with the first line of their failure.
func summarize(junit, out string, took time.Duration, o options) (string, error) {
	var r junitSuites
	data, err := os.ReadFile(junit)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// ginkgo writes no report when a parallel process died: read
		// the verbose log (-verbose) instead.
		logData, lerr := os.ReadFile(filepath.Join(filepath.Dir(junit), "e2e.log"))
		if lerr != nil {
			return "", err
		}
		r = casesFromLog(string(logData))
	case err != nil:
		return "", err
	default:
		if err := xml.Unmarshal(data, &r); err != nil {
			return "", fmt.Errorf("%s: %w", junit, err)
		}
	}
	var passed, failed, skipped, notRun []string
	type failure struct{ name, why string }
	var failures []failure
	var suiteFailures []failure
	focus, err := regexp.Compile(o.focus)
	if err != nil {
		return "", err
	}
	var skip *regexp.Regexp
	if o.skip != "" {
		if skip, err = regexp.Compile(o.skip); err != nil {
			return "", err
		}
	}
	for _, s := range r.Suites {
		for _, c := range s.Cases {
			if !strings.HasPrefix(c.Name, "[It]") {
				if c.Failure != nil || c.Error != nil {
					suiteFailures = append(suiteFailures, failure{c.Name, firstLine(c)})
				}
				continue
			}
			name := strings.TrimSpace(strings.TrimPrefix(c.Name, "[It]"))
			if !focus.MatchString(name) || (skip != nil && skip.MatchString(name)) {
				continue // not selected: the report lists every spec of e2e.test
			}
			switch c.Status {
			case "passed":
				passed = append(passed, name)
			case "failed", "panicked", "timedout", "aborted", "interrupted":
				if c.Status == "interrupted" && c.Failure == nil {
					notRun = append(notRun, name)
					continue
				}
				failed = append(failed, name)
				failures = append(failures, failure{name, c.Status + ": " + firstLine(c)})
			case "skipped":
				if c.Skipped != nil && strings.Contains(c.Skipped.Message, "skipped - ") && !strings.Contains(c.Skipped.Message, "Suite Timeout") &&
					!strings.Contains(c.Skipped.Message, "interrupted") {
					skipped = append(skipped, name+" ("+strings.TrimPrefix(c.Skipped.Message, "skipped - ")+")")
				} else {
					notRun = append(notRun, name)
				}
			default: // pending, or a status this summary does not know
				notRun = append(notRun, name)
			}
		}
	}
	sort.Slice(failures, func(i, j int) bool { return failures[i].name < failures[j].name })
	var b strings.Builder
	ran := len(passed) + len(failed)
	fmt.Fprintf(&b, "# e2e.test on %s\n\n", o.node)
	fmt.Fprintf(&b, "focus `%s`, skip `%s`, %d procs", o.focus, o.skip, o.procs)
	if took > 0 {
		fmt.Fprintf(&b, ", took %v", took.Round(time.Second))
	}
	b.WriteString("\n\n")
	pct := 0.0
	if ran > 0 {
		pct = 100 * float64(len(passed)) / float64(ran)
	}
	fmt.Fprintf(&b, "passed %d, failed %d (%.1f%% of %d run), skipped at run time %d, not run (timed out, interrupted or pending) %d\n\n",
		len(passed), len(failed), pct, ran, len(skipped), len(notRun))
	b.WriteString(sigTable(passed, failed))
	if len(suiteFailures) > 0 {
		fmt.Fprintf(&b, "## Suite-level failures\n\n")
		for _, f := range suiteFailures {
			fmt.Fprintf(&b, "- %s: %s\n", f.name, f.why)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "## Failed (%d)\n\n", len(failures))
	for _, f := range failures {
		fmt.Fprintf(&b, "- %s\n  - %s\n", f.name, f.why)
	}
	fmt.Fprintf(&b, "\n## Skipped at run time (%d)\n\n", len(skipped))
	sort.Strings(skipped)
	for _, s := range skipped {
		fmt.Fprintf(&b, "- %s\n", s)
	}
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		return "", err
	}
	// passed.txt lists the passing tests, for comparing runs.
	sort.Strings(passed)
	_ = os.WriteFile(strings.TrimSuffix(out, "summary.md")+"passed.txt", []byte(strings.Join(passed, "\n")+"\n"), 0o644)
	return b.String(), nil
}

// sigRE is the owning SIG of an e2e test's name: "[sig-apps] ...".
var sigRE = regexp.MustCompile(`^\[sig-([a-z0-9-]+)\]`)

// sigTable is the pass rate of each SIG (by the name's "[sig-...]"
// prefix; "none" without one), as a markdown table sorted by SIG.
func sigTable(passed, failed []string) string {
	type count struct{ passed, failed int }
	bySIG := map[string]*count{}
	tally := func(names []string, add func(*count)) {
		for _, n := range names {
			sig := "none"
			if m := sigRE.FindStringSubmatch(n); m != nil {
				sig = m[1]
			}
			if bySIG[sig] == nil {
				bySIG[sig] = &count{}
			}
			add(bySIG[sig])
		}
	}
	tally(passed, func(c *count) { c.passed++ })
	tally(failed, func(c *count) { c.failed++ })
	sigs := make([]string, 0, len(bySIG))
	for s := range bySIG {
		sigs = append(sigs, s)
	}
	sort.Strings(sigs)
	var b strings.Builder
	b.WriteString("| SIG | passed | failed | pass rate |\n|---|---|---|---|\n")
	for _, s := range sigs {
		c := bySIG[s]
		fmt.Fprintf(&b, "| %s | %d | %d | %.0f %% |\n", s, c.passed, c.failed, 100*float64(c.passed)/float64(c.passed+c.failed))
	}
	return b.String() + "\n"
}

// specLine is the first line of a spec's report in ginkgo's output: its
// state (none: passed) and duration; the next line is its text.
var specLine = regexp.MustCompile(`^• (?:\[([A-Z]+)\] )?\[[0-9.]+ seconds\]$`)

// labels is the label list ginkgo prints after a spec's text.
var labels = regexp.MustCompile(` \[[^\[\]]*, [^\[\]]*\]$`)

// casesFromLog is the specs ginkgo reported in its verbose output (-v),
// as a JUnit report has them ("[It] <text>"; ginkgo marks "[It]" in the
// text of failures only), a failure with its "[FAILED] <message>" line.
func casesFromLog(log string) junitSuites {
	var r junitSuites
	r.Suites = make([]struct {
		Cases []junitCase `xml:"testcase"`
	}, 1)
	lines := strings.Split(log, "\n")
	for i := 0; i+1 < len(lines); i++ {
		m := specLine.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil || !strings.HasPrefix(strings.TrimSpace(lines[i+1]), "[") {
			continue
		}
		text := labels.ReplaceAllString(strings.TrimSpace(lines[i+1]), "")
		c := junitCase{Name: "[It] " + strings.Replace(text, " [It] ", " ", 1), Status: "passed"}
		if m[1] != "" {
			c.Status = strings.ToLower(m[1])
		}
		if c.Status == "failed" || c.Status == "panicked" || c.Status == "timedout" {
			why := ""
			for j := i + 2; j < len(lines) && !specLine.MatchString(strings.TrimSpace(lines[j])); j++ {
				t := strings.TrimSpace(lines[j])
				if (strings.HasPrefix(t, "[FAILED] ") || strings.HasPrefix(t, "[PANICKED] ")) && !strings.Contains(t, "] in [") {
					why = t
				}
			}
			c.Failure = &struct {
				Message string `xml:"message,attr"`
				Type    string `xml:"type,attr"`
				Body    string `xml:",chardata"`
			}{Message: why}
		}
		r.Suites[0].Cases = append(r.Suites[0].Cases, c)
	}
	return r
}

// firstLine is the first meaningful line of a case's failure.
func firstLine(c junitCase) string {
	msg := ""
	switch {
	case c.Failure != nil:
		msg = c.Failure.Message
		if strings.TrimSpace(msg) == "" {
			msg = c.Failure.Body
		}
	case c.Error != nil:
		msg = c.Error.Message
	}
	for _, l := range strings.Split(msg, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 300 {
				l = l[:300] + "..."
			}
			return l
		}
	}
	return ""
}
