// Package etcd runs the shim's embedded etcd (go.etcd.io/etcd/server/v3
// embed, the version k8s.io/apiserver requires): one member, listening on
// loopback only, its data in one directory.
package etcd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"
	"syscall"
	"time"

	"k8s.io/utils/clock"

	"github.com/skiffnode/skiff/shim/etcd/internal/embed"
)

// Options of the embedded etcd.
type Options struct {
	// Dir holds the member's data (WAL and bbolt database).
	Dir string
	// ClientURL to listen on; default http://127.0.0.1:<a free port> (see
	// Server.ClientURL).
	ClientURL string
	// QuotaBytes is the backend quota; default 2 GiB (etcd's).
	QuotaBytes int64
	// SnapshotCount: committed entries between snapshots to disk. Default
	// 10000 (kube's etcd default).
	SnapshotCount uint64
	// SnapshotCatchUpEntries: raft entries kept in memory after each
	// snapshot (etcd 3.6 snapshots to memory every 100 entries), for slow
	// followers. Default DefaultSnapshotCatchUpEntries.
	SnapshotCatchUpEntries uint64
	// DefragInterval: how often the member's backend is checked and, when
	// mostly free, defragmented (see needsDefrag). Default
	// DefaultDefragInterval; negative: never.
	DefragInterval time.Duration

	// clock drives the maintenance loop; the real one unless a test sets it.
	clock clock.WithTicker
}

// DefaultSnapshotCatchUpEntries is the shim's raft log length in memory.
// etcd's default, 5000, is for followers catching up; one member has none,
// and 5000 entries of pod status updates (~2 KB each) held ~10 MB of heap
// after a few hours' traffic (shim/NOTES.md, Measurements). 500 still lets
// a learner added by hand catch up from the log after a short pause.
const DefaultSnapshotCatchUpEntries = 500

// electionMs is the member's election timeout.
const electionMs = 500

// Server is a started embedded etcd and its maintenance loop.
type Server struct {
	e         *embed.Etcd
	clientURL string

	// stop ends the maintenance loop (nil without one); wg waits for it.
	stop context.CancelFunc
	wg   sync.WaitGroup
}

// ClientURL is the URL the apiserver's storage connects to.
func (s *Server) ClientURL() string { return s.clientURL }

// Close stops the maintenance loop, waits for a defragmentation under
// way, then stops the member.
func (s *Server) Close() {
	if s.stop != nil {
		s.stop()
	}
	s.wg.Wait()
	s.e.Close()
}

// Err reports the member's fatal errors.
func (s *Server) Err() <-chan error { return s.e.Err() }

// Start starts the member and waits until it serves, or ctx ends. The
// maintenance loop (Options.DefragInterval) runs until Close.
func Start(ctx context.Context, o Options) (*Server, error) {
	setWALSegmentSize()
	e, err := startEtcd(o)
	if err != nil {
		return nil, fmt.Errorf("start embedded etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded etcd: %w", err)
	case <-time.After(time.Minute):
		e.Close()
		return nil, fmt.Errorf("embedded etcd not ready after a minute")
	case <-ctx.Done():
		e.Close()
		return nil, ctx.Err()
	}
	s := &Server{e: e, clientURL: "http://" + e.Clients[0].Addr().String()}
	if o.DefragInterval >= 0 {
		interval, clk := o.DefragInterval, o.clock
		if interval == 0 {
			interval = DefaultDefragInterval
		}
		if clk == nil {
			clk = clock.RealClock{}
		}
		s.startMaintenance(ctx, clk, interval)
	}
	return s, nil
}

// portAttempts is how often startEtcd picks a free client port: another
// process may bind the one picked before etcd does.
const portAttempts = 3

// startEtcd starts the member of o; without o.ClientURL, again on
// another free port while the one picked was taken meanwhile.
func startEtcd(o Options) (*embed.Etcd, error) {
	for attempt := 1; ; attempt++ {
		cfg, err := newConfig(o)
		if err != nil {
			return nil, err
		}
		e, err := embed.StartEtcd(cfg)
		if err == nil || o.ClientURL != "" || attempt == portAttempts || !errors.Is(err, syscall.EADDRINUSE) {
			return e, err
		}
	}
}

// newConfig is the member's configuration from o.
func newConfig(o Options) (*embed.Config, error) {
	cfg := embed.NewConfig()
	cfg.Name = "skiff"
	cfg.Dir = o.Dir
	cfg.LogLevel = "error"
	cfg.Logger = "zap"
	cfg.LogOutputs = []string{"stderr"}
	client := o.ClientURL
	if client == "" {
		// etcd dials its advertised client URL itself (its gRPC gateway),
		// so the port must be known before it starts: "127.0.0.1:0" would
		// leave that client retrying port 0 forever.
		port, err := freePort()
		if err != nil {
			return nil, fmt.Errorf("etcd client port: %w", err)
		}
		client = fmt.Sprintf("http://127.0.0.1:%d", port)
	}
	cu, err := url.Parse(client)
	if err != nil {
		return nil, fmt.Errorf("etcd client URL: %w", err)
	}
	// One member: the peer URL is never dialled, but etcd needs a peer
	// listener; a free loopback port, advertised under a fixed name so the
	// member's identity does not change between starts.
	pu, _ := url.Parse("http://127.0.0.1:0")
	advertisePeer, _ := url.Parse("http://127.0.0.1:2380")
	cfg.ListenClientUrls = []url.URL{*cu}
	cfg.AdvertiseClientUrls = []url.URL{*cu}
	cfg.ListenPeerUrls = []url.URL{*pu}
	cfg.AdvertisePeerUrls = []url.URL{*advertisePeer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.QuotaBackendBytes = o.QuotaBytes
	if cfg.QuotaBackendBytes == 0 {
		cfg.QuotaBackendBytes = 2 << 30
	}
	if o.SnapshotCount > 0 {
		cfg.SnapshotCount = o.SnapshotCount
	}
	// One member still waits for an election timeout before it leads:
	// with etcd's 1000 ms a start took 0.1-1.0 s (0.6 s on average), most
	// of the shim's cold start; with 500 ms 0.1-0.5 s (shim/NOTES.md,
	// Measurements). 5 heartbeats is etcd's minimum; the heartbeat
	// (100 ms) is kept, so no more idle wake-ups.
	cfg.ElectionMs = electionMs
	cfg.SnapshotCatchUpEntries = o.SnapshotCatchUpEntries
	if cfg.SnapshotCatchUpEntries == 0 {
		cfg.SnapshotCatchUpEntries = DefaultSnapshotCatchUpEntries
	}
	// kube-apiserver compacts every 5 minutes itself (its storage
	// CompactionInterval, shim/server keeps the default); etcd's own
	// compaction stays off, as kubeadm's. WAL and snapshot files: etcd's
	// 5 each (MaxWalFiles, MaxSnapFiles), WAL files of walSegmentBytes.
	return cfg, nil
}

// freePort returns a loopback TCP port free at the time of the call.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
