package service

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/skiffnode/skiff/runtime"
)

// dirImporter is what WatchArchiveDir needs of the importer.
type dirImporter interface {
	runtime.ImageImporter
	ImportDir(ctx context.Context, dir string) ([]string, error)
}

// WatchArchiveDir imports archives added to dir (like k3s's agent/images) and
// calls changed afterwards so pods waiting for an image retry. A quiet
// period lets a copy finish before the import. Blocks until ctx is done.
func WatchArchiveDir(ctx context.Context, dir string, imp runtime.ImageImporter, changed func(), log *slog.Logger) {
	di, ok := imp.(dirImporter)
	if !ok {
		return
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		log.Warn("cannot watch image directory", "dir", dir, "err", err)
		return
	}
	defer w.Close()
	if err := os.MkdirAll(dir, 0o755); err == nil {
		err = w.Add(dir)
		if err != nil {
			log.Warn("cannot watch image directory", "dir", dir, "err", err)
			return
		}
	}
	const quiet = 500 * time.Millisecond
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-w.Events:
			if ev.Op&(fsnotify.Create|fsnotify.Write|fsnotify.Rename) != 0 {
				timer.Reset(quiet)
			}
		case err := <-w.Errors:
			log.Warn("image directory watch", "err", err)
		case <-timer.C:
			names, err := di.ImportDir(ctx, dir)
			if err != nil {
				log.Error("importing image archives", "dir", dir, "err", err)
			}
			log.Info("image archives imported", "images", names)
			changed()
		}
	}
}
