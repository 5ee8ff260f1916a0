package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/skiffnode/skiff/runtime/containerd"
	"github.com/skiffnode/skiff/server"
)

// newImagesCmd is `skiff images`: ls, pull and rm through the agent's API
// (so pulls use the node's credentials and the agent's pull
// serialization, and ls shows the agent's use records); import straight
// into the managed containerd.
func newImagesCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "images", Short: "Manage the runtime's images"}
	cmd.AddCommand(newImagesImportCmd(), newImagesLsCmd(), newImagesPullCmd(), newImagesRmCmd())
	return cmd
}

func newImagesImportCmd() *cobra.Command {
	var rootDir, endpoint string
	cmd := &cobra.Command{
		Use:   "import FILE...",
		Short: "Import docker or OCI image archives into the managed containerd",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sock := filepath.Join(rootDir, "containerd", "containerd.sock")
			if endpoint != "" {
				sock = strings.TrimPrefix(endpoint, "unix://")
			}
			imp, err := containerd.NewImporter(sock)
			if err != nil {
				return err
			}
			defer imp.Close()
			for _, f := range args {
				names, err := imp.ImportArchive(cmd.Context(), f)
				if err != nil {
					return fmt.Errorf("import %s: %w", f, err)
				}
				for _, n := range names {
					fmt.Fprintln(cmd.OutOrStdout(), "imported", n)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&rootDir, "root-dir", defaultRootDir, "the agent's --root-dir (for the managed containerd)")
	cmd.Flags().StringVar(&endpoint, "container-runtime-endpoint", "", "containerd socket (default: the managed one under --root-dir)")
	return cmd
}

func newImagesLsCmd() *cobra.Command {
	var co clientOptions
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List images, with their size, last use and pinning",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := co.client()
			if err != nil {
				return err
			}
			imgs, err := cl.Images(cmd.Context())
			if err != nil {
				return err
			}
			return printImages(cmd.OutOrStdout(), imgs, time.Now())
		},
	}
	co.addFlags(cmd)
	return cmd
}

func newImagesPullCmd() *cobra.Command {
	var co clientOptions
	cmd := &cobra.Command{
		Use:   "pull REF",
		Short: "Pull an image through the agent (node credentials, registries file, pull serialization)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := co.client()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			d := &pullDisplay{w: out, tty: isTerminal(out), ref: args[0]}
			d.start()
			res, err := cl.PullImage(cmd.Context(), args[0], d.progress)
			d.done(res, err)
			return err
		},
	}
	co.addFlags(cmd)
	return cmd
}

func newImagesRmCmd() *cobra.Command {
	var co clientOptions
	cmd := &cobra.Command{
		Use:     "rm REF...",
		Aliases: []string{"rmi"},
		Short:   "Remove images (with all their tags) that no container uses",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := co.client()
			if err != nil {
				return err
			}
			var errs []error
			for _, ref := range args {
				if err := cl.RemoveImage(cmd.Context(), ref); err != nil {
					errs = append(errs, fmt.Errorf("remove %s: %w", ref, err))
					continue
				}
				fmt.Fprintln(cmd.OutOrStdout(), "Deleted:", ref)
			}
			return errors.Join(errs...)
		},
	}
	co.addFlags(cmd)
	return cmd
}

// printImages writes the table of `skiff images ls`: crictl images'
// columns (one row per tag, IDs cut to 13 characters, decimal sizes) and
// LAST USED ("in use", "5m ago", or "-" when never seen used) and PINNED.
// Rows are sorted by image and tag.
func printImages(w io.Writer, imgs []server.Image, now time.Time) error {
	type row struct{ repo, tag, id, size, last, pinned string }
	var rows []row
	for _, img := range imgs {
		id := strings.TrimPrefix(img.ID, "sha256:")
		if len(id) > 13 {
			id = id[:13]
		}
		last := "-"
		switch {
		case img.InUse:
			last = "in use"
		case img.LastUsed != nil:
			last = duration.HumanDuration(now.Sub(*img.LastUsed)) + " ago"
		}
		for _, rt := range repoTags(img) {
			rows = append(rows, row{rt[0], rt[1], id, humanSize(img.Size), last, fmt.Sprint(img.Pinned)})
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].repo != rows[j].repo {
			return rows[i].repo < rows[j].repo
		}
		return rows[i].tag < rows[j].tag
	})
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "IMAGE\tTAG\tIMAGE ID\tSIZE\tLAST USED\tPINNED")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.repo, r.tag, r.id, r.size, r.last, r.pinned)
	}
	return tw.Flush()
}

// repoTags splits an image's tags into (repository, tag) pairs as crictl
// does; an untagged image shows the repository of its digest, or <none>.
func repoTags(img server.Image) [][2]string {
	var out [][2]string
	for _, t := range img.RepoTags {
		slash := strings.LastIndex(t, "/")
		if i := strings.LastIndex(t, ":"); i > slash {
			out = append(out, [2]string{t[:i], t[i+1:]})
		} else {
			out = append(out, [2]string{t, "<none>"})
		}
	}
	if len(out) > 0 {
		return out
	}
	repo := "<none>"
	if len(img.RepoDigests) > 0 {
		repo, _, _ = strings.Cut(img.RepoDigests[0], "@")
	}
	return [][2]string{{repo, "<none>"}}
}

// humanSize formats bytes with 3 significant digits and decimal units, as
// crictl (docker/go-units HumanSizeWithPrecision) does: "4.27MB", "745kB".
func humanSize(n uint64) string {
	units := []string{"B", "kB", "MB", "GB", "TB", "PB"}
	size := float64(n)
	i := 0
	for size >= 1000 && i < len(units)-1 {
		size /= 1000
		i++
	}
	return fmt.Sprintf("%.*g%s", 3, size, units[i])
}

// pullDisplay shows a pull's progress: on a terminal one line rewritten in
// place; otherwise a line when the pull starts, one every plainEvery, and
// the result.
type pullDisplay struct {
	w     io.Writer
	tty   bool
	ref   string
	plain time.Duration // elapsed time of the last plain progress line
}

// plainEvery is how often a pull's progress is written when the output is
// not a terminal (a log, a pipe).
const plainEvery = 5 * time.Second

func (d *pullDisplay) start() {
	if !d.tty {
		fmt.Fprintf(d.w, "Pulling %s\n", d.ref)
	}
}

// progress shows one progress event.
func (d *pullDisplay) progress(ev server.PullEvent) {
	line := fmt.Sprintf("Pulling %s: %s", d.ref, ev.Elapsed.Round(100*time.Millisecond))
	if ev.Bytes >= 0 {
		line += ", " + humanSize(uint64(ev.Bytes)) + " downloaded"
	}
	if d.tty {
		fmt.Fprintf(d.w, "\r\x1b[K%s", line)
		return
	}
	if ev.Elapsed-d.plain >= plainEvery {
		d.plain = ev.Elapsed
		fmt.Fprintln(d.w, line)
	}
}

// done ends the display with the result, or nothing on error (the caller
// reports it).
func (d *pullDisplay) done(res *server.PullResult, err error) {
	if d.tty {
		fmt.Fprint(d.w, "\r\x1b[K")
	}
	if err != nil {
		return
	}
	fmt.Fprintf(d.w, "Pulled %s: image %s, %s, in %s (%s including waiting)\n",
		d.ref, res.ImageID, humanSize(res.Size), res.Took.Round(time.Millisecond), (res.Took + res.Waited).Round(time.Millisecond))
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
