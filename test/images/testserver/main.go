// Command testserver is the process inside skiff's e2e test image
// (skiff.test/testserver:1). One static binary covers every behaviour the
// e2e suite needs from a container: probe targets, exit codes, signal
// handling, memory pressure, termination messages and periodic logging.
//
// Every flag can also be set through an environment variable (the flag wins
// when both are given):
//
//	flag                          env var                        default
//	--http-port N                 TESTSERVER_HTTP_PORT           8080 (0: off)
//	--tcp-port N                  TESTSERVER_TCP_PORT            8081 (0: off)
//	--grpc-port N                 TESTSERVER_GRPC_PORT           8082 (0: off)
//	--exit-code N                 TESTSERVER_EXIT_CODE           0
//	--exit-after DURATION         TESTSERVER_EXIT_AFTER          0 (run forever)
//	--ignore-sigterm              TESTSERVER_IGNORE_SIGTERM      false
//	--sigterm-exit-code N         TESTSERVER_SIGTERM_EXIT_CODE   0
//	--memory-hog-mib N            TESTSERVER_MEMORY_HOG_MIB      0
//	--termination-message TEXT    TESTSERVER_TERMINATION_MESSAGE ""
//	--termination-message-path P  TESTSERVER_TERMINATION_MESSAGE_PATH /dev/termination-log
//	--ready-after DURATION        TESTSERVER_READY_AFTER         0 (ready at once)
//	--log-every DURATION          TESTSERVER_LOG_EVERY           0 (off)
//
// HTTP endpoints (on --http-port):
//
//	GET  /healthz                 200 "ok"
//	GET  /ready                   200 when ready, else 503
//	POST /ready?state=true|false  sets readiness
//	GET  /status/{code}           responds with that status code
//	GET  /redirect?to=URL         302 to URL
//	GET  /headers                 the request headers as a JSON object
//	ANY  /exit?code=N             responds, then exits with code N
//	POST /grpc-health?status=S    sets the gRPC health status (SERVING,
//	                              NOT_SERVING); optional &service=NAME
//
// The TCP port accepts connections and closes them at once. The gRPC port
// serves grpc.health.v1.Health, SERVING until toggled.
//
// The process prints a startup line to stdout, a line on SIGTERM, and with
// --ignore-sigterm keeps running after SIGTERM, so only SIGKILL stops it
// (it installs a handler, which also makes PID 1 of a container receive the
// signal). Whenever it exits by itself (--exit-after, /exit, SIGTERM) it
// first writes --termination-message, if set, to --termination-message-path.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// config holds the parsed flags.
type config struct {
	httpPort, tcpPort, grpcPort int
	exitCode                    int
	exitAfter                   time.Duration
	ignoreSigterm               bool
	sigtermExitCode             int
	memoryHogMiB                int
	terminationMessage          string
	terminationMessagePath      string
	readyAfter                  time.Duration
	logEvery                    time.Duration
}

func main() {
	cfg, err := parseConfig(os.Args[1:], os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testserver:", err)
		os.Exit(2)
	}
	if err := run(cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "testserver:", err)
		os.Exit(1)
	}
}

// parseConfig reads flags from args, defaulting each from its environment
// variable (looked up with getenv).
func parseConfig(args []string, getenv func(string) string) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("testserver", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	env := envDefaults{getenv: getenv}
	fs.IntVar(&cfg.httpPort, "http-port", env.int("TESTSERVER_HTTP_PORT", 8080), "HTTP port (0: off)")
	fs.IntVar(&cfg.tcpPort, "tcp-port", env.int("TESTSERVER_TCP_PORT", 8081), "TCP accept-and-close port (0: off)")
	fs.IntVar(&cfg.grpcPort, "grpc-port", env.int("TESTSERVER_GRPC_PORT", 8082), "gRPC health port (0: off)")
	fs.IntVar(&cfg.exitCode, "exit-code", env.int("TESTSERVER_EXIT_CODE", 0), "exit code for --exit-after")
	fs.DurationVar(&cfg.exitAfter, "exit-after", env.duration("TESTSERVER_EXIT_AFTER", 0), "exit after this delay (0: never)")
	fs.BoolVar(&cfg.ignoreSigterm, "ignore-sigterm", env.bool("TESTSERVER_IGNORE_SIGTERM"), "keep running on SIGTERM")
	fs.IntVar(&cfg.sigtermExitCode, "sigterm-exit-code", env.int("TESTSERVER_SIGTERM_EXIT_CODE", 0), "exit code on SIGTERM")
	fs.IntVar(&cfg.memoryHogMiB, "memory-hog-mib", env.int("TESTSERVER_MEMORY_HOG_MIB", 0), "allocate and hold this many MiB")
	fs.StringVar(&cfg.terminationMessage, "termination-message", getenv("TESTSERVER_TERMINATION_MESSAGE"), "written at exit")
	fs.StringVar(&cfg.terminationMessagePath, "termination-message-path",
		env.string("TESTSERVER_TERMINATION_MESSAGE_PATH", "/dev/termination-log"), "termination message file")
	fs.DurationVar(&cfg.readyAfter, "ready-after", env.duration("TESTSERVER_READY_AFTER", 0), "become ready after this delay")
	fs.DurationVar(&cfg.logEvery, "log-every", env.duration("TESTSERVER_LOG_EVERY", 0), "print a line this often (0: off)")
	if env.err != nil {
		return config{}, env.err
	}
	if err := fs.Parse(args); err != nil {
		return config{}, fmt.Errorf("parse flags: %w", err)
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return cfg, nil
}

// envDefaults parses environment variables used as flag defaults and keeps
// the first error.
type envDefaults struct {
	getenv func(string) string
	err    error
}

func (e *envDefaults) string(key, def string) string {
	if v := e.getenv(key); v != "" {
		return v
	}
	return def
}

func (e *envDefaults) int(key string, def int) int {
	v := e.getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil && e.err == nil {
		e.err = fmt.Errorf("%s: %w", key, err)
	}
	return n
}

func (e *envDefaults) bool(key string) bool {
	v := e.getenv(key)
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil && e.err == nil {
		e.err = fmt.Errorf("%s: %w", key, err)
	}
	return b
}

func (e *envDefaults) duration(key string, def time.Duration) time.Duration {
	v := e.getenv(key)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil && e.err == nil {
		e.err = fmt.Errorf("%s: %w", key, err)
	}
	return d
}

// run starts everything cfg asks for and blocks until the process exits.
func run(cfg config, out io.Writer) error {
	// Handle signals before announcing the start, so a SIGTERM sent right
	// after the startup line is never lost to the default action.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	ex := &exiter{out: out, message: cfg.terminationMessage, path: cfg.terminationMessagePath, exit: os.Exit}
	srv := newServer(out, ex.Exit)
	hog := allocate(cfg.memoryHogMiB)
	if cfg.memoryHogMiB > 0 {
		fmt.Fprintf(out, "testserver: holding %d MiB\n", len(hog)/(1<<20))
	}
	srv.setReadyAfter(cfg.readyAfter)
	if err := srv.listen(cfg.httpPort, cfg.tcpPort, cfg.grpcPort); err != nil {
		return err
	}
	fmt.Fprintf(out, "testserver: started pid=%d http=%d tcp=%d grpc=%d\n",
		os.Getpid(), cfg.httpPort, cfg.tcpPort, cfg.grpcPort)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if cfg.logEvery > 0 {
		go logLoop(ctx, out, cfg.logEvery)
	}
	var exitTimer <-chan time.Time
	if cfg.exitAfter > 0 {
		exitTimer = time.After(cfg.exitAfter)
	}
	for {
		select {
		case <-exitTimer:
			ex.Exit(cfg.exitCode)
		case sig := <-sigs:
			if cfg.ignoreSigterm && sig == syscall.SIGTERM {
				fmt.Fprintln(out, "testserver: received SIGTERM, ignoring it")
				continue
			}
			fmt.Fprintf(out, "testserver: received %s, exiting\n", sigName(sig))
			ex.Exit(cfg.sigtermExitCode)
		}
		keep(hog)
	}
}

func sigName(sig os.Signal) string {
	if sig == syscall.SIGTERM {
		return "SIGTERM"
	}
	return "SIGINT"
}

// logLoop prints a numbered line every interval until ctx ends.
func logLoop(ctx context.Context, out io.Writer, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			fmt.Fprintf(out, "testserver: tick %d at %s\n", n, now.UTC().Format(time.RFC3339Nano))
		}
	}
}

// allocate returns mib MiB of memory with every page written, so it is
// resident and counts against the memory cgroup.
func allocate(mib int) []byte {
	if mib <= 0 {
		return nil
	}
	b := make([]byte, mib<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	return b
}

// keep stops the compiler from dropping the hog.
func keep(b []byte) {
	if len(b) > 0 && b[0] == 0 {
		b[0] = 1
	}
}

// exiter ends the process, writing the termination message first.
type exiter struct {
	out           io.Writer
	message, path string
	exit          func(int)
}

// Exit writes the termination message (if any) and exits with code.
func (e *exiter) Exit(code int) {
	if e.message != "" {
		if err := os.WriteFile(e.path, []byte(e.message), 0o644); err != nil {
			fmt.Fprintf(e.out, "testserver: write termination message: %v\n", err)
		}
	}
	fmt.Fprintf(e.out, "testserver: exiting with code %d\n", code)
	e.exit(code)
}
