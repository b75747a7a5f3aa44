package engine

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
)

// Bounds of one component's log in a run. A tool may print without end;
// knit keeps, and stores, the start and the end of what it printed.
const (
	logHeadBytes = 256 << 10 // the first lines kept
	logTailBytes = 768 << 10 // the last lines kept
	logLineBytes = 16 << 10  // a longer line is cut into lines this long
)

// stepLog is one component's tool output in a run. It splits the output
// into lines and passes every line through the component's masker (the one
// masking rule) both on its way to the live log (live: log events) and to
// the stored log (finish). Memory stays bounded whatever the tool prints:
// the first logHeadBytes and the last logTailBytes of lines are kept, the
// middle is counted, and appending a line costs O(1).
//
// While hold is set, live lines wait until finish: the tool may print a
// value that becomes known as a secret only once its outputs are read (a
// component's own new sensitive output). finish masks them with the final
// secrets, then publishes them. Only kept lines can be published late; a
// note says how many others were held back for good.
//
// It is an io.Writer safe for concurrent use.
type stepLog struct {
	mu      sync.Mutex
	partial []byte
	mask    *masker
	live    func(line string) // publishes a masked line; nil: no live log
	hold    bool

	head      []string // lines 0 .. len(head)-1, raw
	headBytes int
	tail      []string // tail[tailOff:] are the last lines written, raw
	tailOff   int
	tailBytes int
	total     int64 // lines written
	liveNext  int64 // the next line to publish live
}

func (l *stepLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	rest := l.partial
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		l.add(string(bytes.TrimRight(rest[:i], "\r")))
		rest = rest[i+1:]
	}
	for len(rest) > logLineBytes {
		l.add(string(rest[:logLineBytes]))
		rest = rest[logLineBytes:]
	}
	// Keep only the partial line, in a buffer of its own size.
	l.partial = append(l.partial[:0], rest...)
	return len(p), nil
}

// begin starts a phase of the component's work: the log masks secrets,
// publishes lines on live (when set) and, with hold, holds them until finish.
func (l *stepLog) begin(secrets []string, hold bool, live func(line string)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mask, l.hold, l.live = newMasker(secrets), hold, live
}

// add keeps one raw line and, unless held, publishes it masked.
func (l *stepLog) add(line string) {
	if l.mask == nil {
		l.mask = newMasker(nil)
	}
	if l.tailOff == len(l.tail) && l.headBytes+len(line) <= logHeadBytes {
		l.head = append(l.head, line)
		l.headBytes += len(line)
	} else {
		l.tail = append(l.tail, line)
		l.tailBytes += len(line)
		for l.tailBytes > logTailBytes && len(l.tail)-l.tailOff > 1 {
			l.tailBytes -= len(l.tail[l.tailOff])
			l.tail[l.tailOff] = ""
			l.tailOff++
		}
		if l.tailOff > 1024 && l.tailOff > len(l.tail)/2 {
			// Compact: each line is moved O(1) times on average.
			l.tail = append([]string(nil), l.tail[l.tailOff:]...)
			l.tailOff = 0
		}
	}
	l.total++
	if !l.hold {
		l.release()
	}
}

// tailStart is the number of the first line in tail.
func (l *stepLog) tailStart() int64 { return l.total - int64(len(l.tail)-l.tailOff) }

// release publishes, masked, the lines not yet published; lines not kept
// are counted in a note.
func (l *stepLog) release() {
	if l.live == nil {
		l.liveNext = l.total
		return
	}
	for i := l.liveNext; i < l.total; i++ {
		if i >= int64(len(l.head)) && i < l.tailStart() {
			skip := l.tailStart() - i
			l.live(fmt.Sprintf("knit: %d lines were held back until the component's outputs were known and are not kept (too many); the stored log keeps the first and last ones", skip))
			i += skip - 1
			continue
		}
		l.live(l.mask.line(l.at(i)))
	}
	l.liveNext = l.total
}

// at returns kept line i.
func (l *stepLog) at(i int64) string {
	if i < int64(len(l.head)) {
		return l.head[i]
	}
	return l.tail[l.tailOff+int(i-l.tailStart())]
}

// finish ends a phase of the tool: a last line without newline counts as
// a line, secrets join the masker (the component's new sensitive outputs),
// held lines are published masked, and the stored log is returned, every
// line masked by the same rule. Writing may go on after it.
func (l *stepLog) finish(secrets []string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.partial) > 0 {
		l.add(string(bytes.TrimRight(l.partial, "\r")))
		l.partial = l.partial[:0]
	}
	if l.mask == nil {
		l.mask = newMasker(nil)
	}
	l.mask.add(secrets)
	l.release()
	var b strings.Builder
	for _, line := range l.head {
		b.WriteString(l.mask.line(line))
		b.WriteByte('\n')
	}
	if omitted := l.tailStart() - int64(len(l.head)); omitted > 0 {
		fmt.Fprintf(&b, "knit: … %d lines omitted: the log keeps the first %d KiB and the last %d KiB of lines …\n",
			omitted, logHeadBytes>>10, logTailBytes>>10)
	}
	for _, line := range l.tail[l.tailOff:] {
		b.WriteString(l.mask.line(line))
		b.WriteByte('\n')
	}
	return b.String()
}
