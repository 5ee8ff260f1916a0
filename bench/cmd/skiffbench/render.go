package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/skiffnode/skiff/bench/internal/report"
)

// render writes the report of an earlier run again from its JSON results
// (-render), beside them, with the current report code: a change to the
// report does not need a new run of the benchmark. With latest it also
// replaces latest.md there. The plots are drawn again from the results.
func render(path string, latest bool) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("-render: %w", err)
	}
	var res report.Results
	if err := json.Unmarshal(data, &res); err != nil {
		return fmt.Errorf("-render %s: %w", path, err)
	}
	return write(filepath.Dir(path), &res, latest)
}
