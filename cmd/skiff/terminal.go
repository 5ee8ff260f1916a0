package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// terminalSize is the JSON a resize message carries (the kubelet's
// remotecommand.TerminalSize).
type terminalSize struct {
	Width, Height uint16
}

// terminalFd returns the file descriptor of stdin when it is a terminal.
func terminalFd(stdin io.Reader) (int, bool) {
	f, ok := stdin.(*os.File)
	if !ok {
		return 0, false
	}
	fd := int(f.Fd())
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return fd, err == nil
}

// makeRaw puts the terminal fd in raw mode (as golang.org/x/term's MakeRaw:
// no echo, no line editing, no signals from keys, 8-bit bytes) and returns
// the function that restores its previous mode.
func makeRaw(fd int) (func(), error) {
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, err
	}
	raw := *old
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &raw); err != nil {
		return nil, err
	}
	return func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, old) }, nil
}

// watchSize sends the size of the terminal fd now and after every
// SIGWINCH until ctx is done; the channel is closed then.
func watchSize(ctx context.Context, fd int) <-chan terminalSize {
	out := make(chan terminalSize, 1)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGWINCH)
	go func() {
		defer close(out)
		defer signal.Stop(sigs)
		for {
			if ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); err == nil {
				select {
				case out <- terminalSize{Width: ws.Col, Height: ws.Row}:
				case <-ctx.Done():
					return
				}
			}
			select {
			case <-sigs:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}
