package report

import (
	"strings"
	"testing"
)

func TestPullTargetAndSection(t *testing.T) {
	run := Run{Runtime: RuntimeManaged, Pull: &Pull{ImageBytes: 8_400_000,
		Skiff: NewSeries([]float64{0.30, 0.32, 0.31}), Direct: NewSeries([]float64{0.30, 0.29, 0.31})}}
	var pull *Target
	for _, tg := range Evaluate(run, IssueLimits) {
		if strings.HasPrefix(tg.Name, "image pull") {
			pull = &tg
		}
	}
	if pull == nil || pull.Status != Met || !strings.HasPrefix(pull.Value, "1.03x") {
		t.Fatalf("pull target %+v, want met at 1.03x", pull)
	}
	run.Pull.Skiff = NewSeries([]float64{0.40})
	for _, tg := range Evaluate(run, IssueLimits) {
		if strings.HasPrefix(tg.Name, "image pull") && tg.Status != NotMet {
			t.Errorf("skiff 0.40 s vs 0.30 s: %+v, want not met", tg)
		}
	}
	for _, tg := range Evaluate(Run{Runtime: RuntimeManaged}, IssueLimits) {
		if strings.HasPrefix(tg.Name, "image pull") {
			t.Errorf("target %+v without a pull scenario", tg)
		}
	}
	var b strings.Builder
	writePull(&b, "1.7", RuntimeManaged, run.Pull)
	if !strings.Contains(b.String(), "image 8.4 MB") || !strings.Contains(b.String(), "| pull, image removed before each | 0.400 s") {
		t.Errorf("section:\n%s", b.String())
	}
}
