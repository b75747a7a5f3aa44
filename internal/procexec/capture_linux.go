package procexec

import (
	"bytes"
	"fmt"
	"io"
	"math"
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
	// midLine: the last byte handed on was not a newline.
	midLine bool
	// log: w is a log (LockedWriter) that a flood may be skipped in.
	log bool
}

// maxBacklog bounds what a command's log output may hold that its writer
// has not had: a memory file, unlike a pipe, never makes a tool wait for
// knit, so a tool printing faster than knit reads (hundreds of MB/s) would
// fill memory, and an interrupted knit would spend long handing on the
// rest. Beyond it, the oldest part is skipped, and the writer told how
// much. Output for other writers (data knit parses) is never skipped.
const maxBacklog = 16 << 20

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
	_, log := w.(interface{ thinnable() })
	c.outs = append(c.outs, &output{f: f, w: w, log: log})
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
// had, and returns how much that was. It reads at its own offsets (pread),
// never moving the file offset the command writes at. A partial last line
// is the writer's to keep. A backlog over maxBacklog is cut (skip). It
// hands on no more than the file held when it began: a tool printing as
// fast as knit reads never keeps it.
func (c *captured) deliver() (n int64) {
	if c.buf == nil {
		c.buf = make([]byte, 32<<10)
	}
	for _, o := range c.outs {
		end := c.skip(o)
		for o.w != nil && o.off < end {
			want := int(min(int64(len(c.buf)), end-o.off))
			got, err := o.f.ReadAt(c.buf[:want], o.off)
			if got > 0 {
				o.off += int64(got)
				n += int64(got)
				o.midLine = c.buf[got-1] != '\n'
				c.write(o, c.buf[:got])
			}
			if err != nil || got < want {
				break
			}
		}
		// Free what the writer has had, so a tool that prints a lot holds
		// no more memory here than one interval's output. Offsets stay.
		if done := o.off &^ (pageSize - 1); done > 0 {
			_ = unix.Fallocate(int(o.f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, done)
		}
	}
	return n
}

// write hands p to o's writer; a writer that fails gets no more.
func (c *captured) write(o *output, p []byte) {
	if o.w == nil {
		return
	}
	if _, err := o.w.Write(p); err != nil {
		o.w = nil
		if c.err == nil {
			c.err = err
		}
	}
}

// skip cuts o's backlog beyond maxBacklog: the writer goes on from the
// first line that starts in the last maxBacklog/2 bytes, after a line
// saying how much was skipped. It returns the file's size.
func (c *captured) skip(o *output) (size int64) {
	st, err := o.f.Stat()
	if err != nil {
		return math.MaxInt64 // read what there is
	}
	size = st.Size()
	if o.w == nil {
		o.off = size // a writer that failed gets nothing: discard, free
		return size
	}
	if !o.log || size-o.off <= maxBacklog {
		return size
	}
	to := size - maxBacklog/2
	// Start at a line: after the first newline from to on.
	var b [4096]byte
	for {
		got, _ := o.f.ReadAt(b[:], to)
		if got == 0 {
			break
		}
		if i := bytes.IndexByte(b[:got], '\n'); i >= 0 {
			to += int64(i) + 1
			break
		}
		to += int64(got)
	}
	note := fmt.Sprintf("knit: %d bytes of output skipped: the tool printed faster than knit reads\n", to-o.off)
	if o.midLine {
		note = "\n" + note
	}
	c.write(o, []byte(note))
	o.off, o.midLine = to, false
	return size
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
