package report

import (
	"fmt"
	"strings"
)

// writeShimMemory writes where skiff-apiserver's memory was at the end of
// the steady window: its RSS by kind and its heap in use, then its heap
// profile's top functions, and why either is missing where it failed;
// nothing for results without them (from before they were measured).
func writeShimMemory(b *strings.Builder, s *Shim) {
	if s.APIMemory == nil && s.APIMemoryError == "" && s.APIHeap == nil && s.APIHeapError == "" {
		return
	}
	rss, heap := "-", "-"
	if m := s.APIMemory; m != nil {
		rss = fmt.Sprintf("%.1f / %.1f / %.1f / %.1f MB", m.RSSMB, m.AnonMB, m.FileMB, m.ShmemMB)
	}
	if h := s.APIHeap; h != nil {
		heap = fmt.Sprintf("%.1f MB", h.InuseMB)
		if s.APIMemory != nil && s.APIMemory.RSSMB > 0 {
			heap += fmt.Sprintf(" (%.0f %% of RSS)", share(h.InuseMB, s.APIMemory.RSSMB))
		}
	}
	fmt.Fprintf(b, "| API server memory at the end of the window (%s) | skiff-apiserver |\n|---|---|\n", shimLoad(s))
	fmt.Fprintf(b, "| RSS / anon / file / shmem (/proc/<pid>/status) | %s |\n", rss)
	fmt.Fprintf(b, "| heap in use (its heap profile: objects live at the last GC) | %s |\n\n", heap)
	if s.APIMemoryError != "" {
		fmt.Fprintf(b, "API server memory by kind: unavailable: %s\n\n", s.APIMemoryError)
	}
	if s.APIHeapError != "" {
		fmt.Fprintf(b, "skiff-apiserver's heap profile: unavailable: %s\n\n", s.APIHeapError)
	}
	writeShimHeapTop(b, s)
}

// writeShimHeapTop writes the top functions of skiff-apiserver's heap
// profile by cumulative and by flat in-use space; nothing without one.
func writeShimHeapTop(b *strings.Builder, s *Shim) {
	h := s.APIHeap
	if h == nil {
		return
	}
	file := "not saved"
	if h.File != "" {
		file = "`" + h.File + "`"
	}
	fmt.Fprintf(b, "skiff-apiserver's heap profile after the window (%s, %.1f MB in use)", file, h.InuseMB)
	if len(h.Cum) == 0 {
		b.WriteString(": no samples.\n\n")
		return
	}
	b.WriteString(": the top functions by cumulative in-use space (live objects allocated in it and what it calls) and by flat (allocated in the function itself).\n\n")
	b.WriteString("| # | by cumulative | in use | by flat | in use |\n|---|---|---|---|---|\n")
	for i := range min(profileRows, max(len(h.Cum), len(h.Flat))) {
		c, f := "- | -", "- | -"
		if i < len(h.Cum) {
			c = fmt.Sprintf("`%s` | %.1f MB (%.0f %%)", h.Cum[i].Func, h.Cum[i].CumMB, share(h.Cum[i].CumMB, h.InuseMB))
		}
		if i < len(h.Flat) {
			f = fmt.Sprintf("`%s` | %.1f MB (%.0f %%)", h.Flat[i].Func, h.Flat[i].FlatMB, share(h.Flat[i].FlatMB, h.InuseMB))
		}
		fmt.Fprintf(b, "| %d | %s | %s |\n", i+1, c, f)
	}
	b.WriteString("\n")
}
