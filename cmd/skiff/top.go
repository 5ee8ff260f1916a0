package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// newTopCmd is `skiff top [pods|containers]`: cpu and memory usage of the
// pods (or their containers) from /stats/summary, like kubectl top.
func newTopCmd() *cobra.Command {
	var co clientOptions
	cmd := &cobra.Command{
		Use:       "top [pods|containers]",
		Short:     "Show cpu and memory usage of pods or containers (like kubectl top)",
		Args:      cobra.MatchAll(cobra.MaximumNArgs(1), cobra.OnlyValidArgs),
		ValidArgs: []string{"pods", "pod", "containers", "container"},
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := co.client()
			if err != nil {
				return err
			}
			sum, err := cl.StatsSummary(cmd.Context())
			if err != nil {
				return err
			}
			containers := len(args) == 1 && (args[0] == "containers" || args[0] == "container")
			return printTop(cmd.OutOrStdout(), sum, containers)
		},
	}
	co.addFlags(cmd)
	return cmd
}

// printTop renders the summary as kubectl top does: cpu in millicores,
// memory (working set) in Mi.
func printTop(w io.Writer, sum *statsapi.Summary, containers bool) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	if containers {
		fmt.Fprintln(tw, "NAMESPACE\tPOD\tNAME\tCPU(cores)\tMEMORY(bytes)")
	} else {
		fmt.Fprintln(tw, "NAMESPACE\tNAME\tCPU(cores)\tMEMORY(bytes)")
	}
	for _, p := range sum.Pods {
		if !containers {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.PodRef.Namespace, p.PodRef.Name, topCPU(p.CPU), topMemory(p.Memory))
			continue
		}
		for _, c := range p.Containers {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.PodRef.Namespace, p.PodRef.Name, c.Name, topCPU(c.CPU), topMemory(c.Memory))
		}
	}
	return tw.Flush()
}

// topCPU is usage in millicores ("<unknown>" before a rate exists).
func topCPU(c *statsapi.CPUStats) string {
	if c == nil || c.UsageNanoCores == nil {
		return "<unknown>"
	}
	return fmt.Sprintf("%dm", *c.UsageNanoCores/1_000_000)
}

// topMemory is the working set in Mi.
func topMemory(m *statsapi.MemoryStats) string {
	if m == nil || m.WorkingSetBytes == nil {
		return "<unknown>"
	}
	return fmt.Sprintf("%dMi", *m.WorkingSetBytes/(1<<20))
}
