package vm

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// cpio "newc" format (the one the kernel unpacks as an initramfs): every
// entry is a 110-byte ASCII header, the NUL-terminated name padded to a
// multiple of 4 bytes, then the data padded to a multiple of 4 bytes. The
// archive ends with an entry called "TRAILER!!!".
const (
	cpioMagic   = "070701"
	cpioTrailer = "TRAILER!!!"
)

// File type bits of a cpio mode (the same values as Linux's S_IF*).
const (
	modeDir     = 0o040000
	modeRegular = 0o100000
	modeSymlink = 0o120000
	modeCharDev = 0o020000
	modePerm    = 0o7777
)

// cpioHeader describes one archive entry.
type cpioHeader struct {
	// Name is the path inside the archive, without a leading slash.
	Name string
	// Mode holds the file type bits and the permissions.
	Mode uint32
	// Size is the length of the data that follows (the target for symlinks).
	Size int64
	// RdevMajor and RdevMinor identify the device of a device node.
	RdevMajor, RdevMinor uint32
}

// cpioWriter writes a newc archive. Entries get increasing inode numbers
// and no hard links; owners are root and times are zero, so equal inputs
// give byte-identical archives. Not safe for concurrent use.
type cpioWriter struct {
	w       *bufio.Writer
	ino     uint32
	remain  int64 // data bytes the current entry still expects
	pad     int64 // padding after the current entry's data
	written int64
	err     error
}

func newCPIOWriter(w io.Writer) *cpioWriter {
	return &cpioWriter{w: bufio.NewWriterSize(w, 1<<20), ino: 1}
}

// WriteHeader starts a new entry; its data (h.Size bytes) must follow
// through Write.
func (c *cpioWriter) WriteHeader(h cpioHeader) error {
	if c.err != nil {
		return c.err
	}
	if c.remain != 0 {
		return fmt.Errorf("cpio: %d bytes of the previous entry missing before %q", c.remain, h.Name)
	}
	if h.Name == "" || strings.HasPrefix(h.Name, "/") || strings.ContainsRune(h.Name, 0) {
		return fmt.Errorf("cpio: invalid entry name %q", h.Name)
	}
	if h.Size < 0 || h.Size > 0xffffffff {
		return fmt.Errorf("cpio: entry %s: size %d out of range", h.Name, h.Size)
	}
	if err := c.padTo4(); err != nil {
		return err
	}
	nlink := uint32(1)
	if h.Mode&0o170000 == modeDir {
		nlink = 2
	}
	fields := []uint32{
		c.ino, h.Mode, 0, 0, nlink, 0, uint32(h.Size),
		0, 0, h.RdevMajor, h.RdevMinor, uint32(len(h.Name) + 1), 0,
	}
	c.ino++
	var b strings.Builder
	b.Grow(110 + len(h.Name) + 4)
	b.WriteString(cpioMagic)
	for _, f := range fields {
		fmt.Fprintf(&b, "%08x", f)
	}
	b.WriteString(h.Name)
	b.WriteByte(0)
	for (b.Len())%4 != 0 {
		b.WriteByte(0)
	}
	if _, err := c.write([]byte(b.String())); err != nil {
		return err
	}
	c.remain = h.Size
	c.pad = (4 - h.Size%4) % 4
	return nil
}

// Write writes data of the current entry.
func (c *cpioWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > c.remain {
		return 0, fmt.Errorf("cpio: write of %d bytes exceeds the entry size (%d left)", len(p), c.remain)
	}
	n, err := c.write(p)
	c.remain -= int64(n)
	return n, err
}

// padTo4 writes the padding after the data of the entry just finished.
func (c *cpioWriter) padTo4() error {
	if c.pad == 0 {
		return nil
	}
	_, err := c.write(make([]byte, c.pad))
	c.pad = 0
	return err
}

func (c *cpioWriter) write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.written += int64(n)
	if err != nil {
		c.err = fmt.Errorf("cpio: %w", err)
	}
	return n, c.err
}

// Close writes the trailer and flushes; it does not close the underlying
// writer.
func (c *cpioWriter) Close() error {
	if err := c.WriteHeader(cpioHeader{Name: cpioTrailer}); err != nil {
		return err
	}
	// The kernel reads the archive in 512-byte blocks; pad like cpio(1).
	if r := c.written % 512; r != 0 {
		if _, err := c.write(make([]byte, 512-r)); err != nil {
			return err
		}
	}
	if err := c.w.Flush(); err != nil {
		return fmt.Errorf("cpio: %w", err)
	}
	return nil
}
