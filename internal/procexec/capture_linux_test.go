package procexec

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestRunWritesOutputToMemoryFilesNotPipes: a tool's stdout is a memory
// file, so knit is not woken while it prints; the writer gets it all.
func TestRunWritesOutputToMemoryFilesNotPipes(t *testing.T) {
	var out, errOut bytes.Buffer
	cmd := Command(context.Background(), "sh", "-c", "readlink /proc/self/fd/1; readlink /proc/self/fd/2 >&2; readlink /proc/self/fd/0")
	cmd.Stdin = strings.NewReader("unused")
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := Run(context.Background(), cmd); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("stdout = %q, want two lines", out.String())
	}
	for i, got := range []string{lines[0], strings.TrimSpace(errOut.String()), lines[1]} {
		if !strings.HasPrefix(got, "/memfd:knit-") {
			t.Errorf("fd %d of the command is %q, want a knit memory file", []int{1, 2, 0}[i], got)
		}
	}
}

// TestRunKeepsInputAndOutputsApart: stdin reaches the command whole;
// stdout and stderr reach their own writers; one writer for both gets them
// interleaved as printed.
func TestRunKeepsInputAndOutputsApart(t *testing.T) {
	var out, errOut bytes.Buffer
	cmd := Command(context.Background(), "sh", "-c", "cat; echo err >&2; echo out")
	cmd.Stdin = bytes.NewReader([]byte("in\n"))
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := Run(context.Background(), cmd); err != nil {
		t.Fatal(err)
	}
	if out.String() != "in\nout\n" || errOut.String() != "err\n" {
		t.Errorf("stdout %q, stderr %q; want %q and %q", out.String(), errOut.String(), "in\nout\n", "err\n")
	}

	var both bytes.Buffer
	cmd = Command(context.Background(), "sh", "-c", "echo 1; echo 2 >&2; echo 3; echo 4 >&2")
	cmd.Stdout, cmd.Stderr = &both, &both
	if err := Run(context.Background(), cmd); err != nil {
		t.Fatal(err)
	}
	if both.String() != "1\n2\n3\n4\n" {
		t.Errorf("shared writer got %q, want the lines in the order printed", both.String())
	}
}

// TestRunIsNotHeldUpByAChildKeepingTheOutputOpen: a command that leaves a
// process behind holding its stdout ends when the command does. Through a
// pipe, Wait would wait for that process until WaitDelay and then fail.
func TestRunIsNotHeldUpByAChildKeepingTheOutputOpen(t *testing.T) {
	var out bytes.Buffer
	cmd := Command(context.Background(), "sh", "-c", "sleep 60 & echo $!")
	cmd.Stdout = &out
	err := Run(context.Background(), cmd)
	if pid, perr := strconv.Atoi(strings.TrimSpace(out.String())); perr == nil {
		defer syscall.Kill(pid, syscall.SIGKILL)
	}
	if err != nil {
		t.Fatalf("Run = %v, want the command's own success", err)
	}
	if _, perr := strconv.Atoi(strings.TrimSpace(out.String())); perr != nil {
		t.Errorf("stdout = %q, want the background pid", out.String())
	}
}

// TestRunHandsOnOutputWhileTheCommandRuns: live logs see a long tool's
// lines before it ends, within a liveInterval or so.
func TestRunHandsOnOutputWhileTheCommandRuns(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &signalWriter{got: make(chan string, 16)}
	cmd := CommandGrace(ctx, time.Second, "sh", "-c", "echo started; exec sleep 60")
	cmd.Stdout = w
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), cmd) }()
	select {
	case line := <-w.got:
		if line != "started\n" {
			t.Errorf("first output %q, want %q", line, "started\n")
		}
	case err := <-done:
		t.Fatalf("Run returned (%v) before any output was handed on", err)
	case <-time.After(30 * time.Second): // a hang guard: the command sleeps 60 s
		t.Fatal("the output of a running command was not handed on while it ran")
	}
	cancel()
	if err := <-done; err == nil {
		t.Error("Run of a cancelled command returned no error")
	}
}

type signalWriter struct{ got chan string }

func (w *signalWriter) Write(p []byte) (int, error) {
	w.got <- string(p)
	return len(p), nil
}

// TestRunFreesOutputTheWriterHasHad: a memory file keeps no more than the
// output not yet handed on, so a tool printing a lot does not hold it all
// twice (in the file and in the writer) until it exits.
func TestRunFreesOutputTheWriterHasHad(t *testing.T) {
	var out bytes.Buffer
	c := &captured{}
	f := c.output(&out)
	if f == nil {
		t.Fatal("no memory file")
	}
	defer c.close()
	if _, err := f.Write(bytes.Repeat([]byte("x"), 1<<20)); err != nil {
		t.Fatal(err)
	}
	c.deliver()
	if out.Len() != 1<<20 {
		t.Fatalf("the writer got %d bytes, want %d", out.Len(), 1<<20)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	if st.Blocks*512 > 64<<10 {
		t.Errorf("the memory file still holds %d bytes after delivery, want its pages freed", st.Blocks*512)
	}
	if _, err := f.Write([]byte("more\n")); err != nil {
		t.Fatal(err)
	}
	c.deliver()
	if !strings.HasSuffix(out.String(), "xmore\n") || out.Len() != 1<<20+5 {
		t.Errorf("output after a freed part: %d bytes ending %q", out.Len(), out.String()[out.Len()-6:])
	}
}

// TestABacklogBeyondTheBoundIsSkippedFromALine: a memory file never makes
// a tool wait, so what a tool printed to a log faster than knit reads is
// cut to the newest maxBacklog/2, from a line start, after a note saying
// so. Output that is data (any other writer) is never cut.
func TestABacklogBeyondTheBoundIsSkippedFromALine(t *testing.T) {
	var out bytes.Buffer
	c := &captured{}
	f := c.output(&LockedWriter{W: &out})
	if f == nil {
		t.Fatal("no memory file")
	}
	defer c.close()
	if _, err := f.Write([]byte("partial")); err != nil {
		t.Fatal(err)
	}
	c.deliver()
	line := []byte(strings.Repeat("y", 99) + "\n")
	for range 5 * maxBacklog / len(line) {
		if _, err := f.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.Write([]byte("last\n")); err != nil {
		t.Fatal(err)
	}
	c.deliver()
	got := out.String()
	if out.Len() > maxBacklog/2+200 || !strings.HasPrefix(got, "partial\nknit: ") || !strings.Contains(got, "bytes of output skipped") {
		t.Fatalf("the writer got %d bytes starting %.120q", out.Len(), got)
	}
	rest := got[strings.Index(got, "faster than knit reads\n")+len("faster than knit reads\n"):]
	if !strings.HasPrefix(rest, strings.Repeat("y", 99)+"\n") || !strings.HasSuffix(rest, "last\n") {
		t.Fatalf("after the note: %.120q … %q", rest, rest[len(rest)-10:])
	}
}

func TestDataIsNeverSkipped(t *testing.T) {
	var out bytes.Buffer
	c := &captured{}
	f := c.output(&out)
	if f == nil {
		t.Fatal("no memory file")
	}
	defer c.close()
	data := bytes.Repeat([]byte("z"), 2*maxBacklog)
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	c.deliver()
	if !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("the writer got %d bytes of %d", out.Len(), len(data))
	}
}
