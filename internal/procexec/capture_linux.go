package procexec

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"

	"golang.org/x/sys/unix"
)

// captured holds a command's in-memory input and its output in anonymous
// memory files (memfd) instead of pipes. Through a pipe knit is woken for
// every line a tool prints and keeps a goroutine copying each stream; a
// tool writing to a memory file wakes nobody. Run hands the writers what
// is new every liveInterval while the command runs, and the rest when it
// has exited, so a tool that runs for less than that costs knit no wakeup
// at all. On a 20-component apply this was about a fifth of knit's own
// CPU. A memory file never reaches a disk, so output holding secrets
// (output -json) is as safe there as in a buffer.
type captured struct {
	in   *os.File
	outs []*output
	buf  []byte
	err  error // the first writer error
}

// output is one memory file a command writes and the writer it is for.
type output struct {
	f   *os.File
	w   io.Writer // nil once a write to it failed: it gets no more
	off int64     // how much of f the writer has had
}

// capture swaps cmd's in-memory Stdin, and its Stdout and Stderr writers
// other than files (which the command writes to itself), for memory
// files. A Stderr that is the Stdout writer shares its file, so the two
// stay interleaved as printed. Where the kernel has no nonblocking pidfd
// (Run could not hand output on while waiting) or no memory file can be
// had, the command keeps its pipes.
func capture(cmd *exec.Cmd) (*captured, error) {
	c := &captured{}
	if !pidfdWorks() {
		return c, nil
	}
	if inMemory(cmd.Stdin) {
		if f, err := memfd("stdin"); err == nil {
			c.in = f
			if err := fill(f, cmd.Stdin); err != nil {
				c.close()
				return nil, err
			}
			cmd.Stdin = f
		}
	}
	stdout, stderr := cmd.Stdout, cmd.Stderr
	if f := c.output(stdout); f != nil {
		cmd.Stdout = f
		if sameWriter(stdout, stderr) {
			cmd.Stderr = f
			return c, nil
		}
	}
	if f := c.output(stderr); f != nil {
		cmd.Stderr = f
	}
	return c, nil
}

// output makes a memory file for writer w, or returns nil when w is nil,
// a file already, or no memory file can be had.
func (c *captured) output(w io.Writer) *os.File {
	if _, isFile := w.(*os.File); w == nil || isFile {
		return nil
	}
	f, err := memfd("output")
	if err != nil {
		return nil
	}
	c.outs = append(c.outs, &output{f: f, w: w})
	return f
}

// fill writes r to f and rewinds f for the command to read.
func fill(f *os.File, r io.Reader) error {
	if _, err := io.Copy(f, r); err != nil {
		return err
	}
	_, err := f.Seek(0, io.SeekStart)
	return err
}

// deliver hands each writer what its output file holds beyond what it has
// had. It reads at its own offsets (pread), never moving the file offset
// the command writes at. A partial last line is the writer's to keep.
func (c *captured) deliver() {
	for _, o := range c.outs {
		for o.w != nil {
			if c.buf == nil {
				c.buf = make([]byte, 32<<10)
			}
			n, err := o.f.ReadAt(c.buf, o.off)
			if n > 0 {
				o.off += int64(n)
				if _, werr := o.w.Write(c.buf[:n]); werr != nil {
					o.w = nil
					if c.err == nil {
						c.err = werr
					}
				}
			}
			if err != nil || n < len(c.buf) {
				break
			}
		}
		// Free what the writer has had, so a tool that prints a lot holds
		// no more memory here than one interval's output. Offsets stay.
		if done := o.off &^ (pageSize - 1); done > 0 {
			_ = unix.Fallocate(int(o.f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, done)
		}
	}
}

// pageSize is the unit a hole is punched in.
const pageSize = 4096

func (c *captured) close() {
	if c.in != nil {
		c.in.Close()
	}
	for _, o := range c.outs {
		o.f.Close()
	}
}

func memfd(name string) (*os.File, error) {
	fd, err := unix.MemfdCreate("knit-"+name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), "memfd:knit-"+name), nil
}

// inMemory reports whether r is input held in memory already, so that
// copying it to a file before the command starts changes nothing it reads.
func inMemory(r io.Reader) bool {
	switch r.(type) {
	case *bytes.Reader, *strings.Reader, *bytes.Buffer:
		return true
	}
	return false
}

// sameWriter reports whether a and b are one writer, as os/exec has one
// goroutine write both streams then. Writers of a type that cannot be
// compared are never the same.
func sameWriter(a, b io.Writer) (same bool) {
	defer func() { _ = recover() }()
	return a != nil && a == b
}
