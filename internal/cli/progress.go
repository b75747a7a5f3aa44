package cli

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
	"knit.dev/knit/internal/engine"
)

// isTerminal reports whether s (stdin, stdout or stderr) is an interactive
// terminal; /dev/null is a character device too, so ask the terminal driver
// (go-isatty knows each OS's way to ask).
func isTerminal(s any) bool {
	f, ok := s.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

// progress shows a run's component states on stderr: a live table redrawn
// in place on a terminal, otherwise one line per state change.
type progress struct {
	w     io.Writer
	live  bool
	start time.Time

	mu     sync.Mutex
	rows   map[string]engine.Event
	drawn  int
	paused bool // a question is on the screen: do not draw over it
	stop   chan struct{}
	done   chan struct{}
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w, live: isTerminal(w), start: time.Now(), rows: map[string]engine.Event{}}
	if p.live {
		p.stop, p.done = make(chan struct{}), make(chan struct{})
		go p.loop()
	}
	return p
}

// Event records one status change; it is the engine's OnEvent.
func (p *progress) Event(ev engine.Event) {
	if ev.Kind != engine.ComponentStatus {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	row, seen := p.rows[ev.Component]
	if !seen {
		row.Time = ev.Time // when the component started, for the live elapsed column
	}
	row.Component, row.Status, row.Reason, row.Elapsed = ev.Component, ev.Status, ev.Reason, ev.Elapsed
	p.rows[ev.Component] = row
	if !p.live {
		line := fmt.Sprintf("%s %-24s %s", ev.Time.Format("15:04:05"), ev.Component, ev.Status)
		if ev.Status.IsTerminal() && ev.Elapsed > 0 {
			line += fmt.Sprintf(" (%s)", ev.Elapsed.Round(time.Millisecond))
		}
		if ev.Reason != "" {
			line += ": " + firstLine(ev.Reason)
		}
		fmt.Fprintln(p.w, line)
	}
}

func (p *progress) loop() {
	defer close(p.done)
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			p.draw()
			return
		case <-t.C:
			p.draw()
		}
	}
}

// Pause stops the live table from drawing, so a question can be asked below it.
func (p *progress) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused = true
}

// Resume draws again, as a fresh table below whatever was printed meanwhile.
func (p *progress) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused, p.drawn = false, 0
}

// draw redraws the table in place (cursor up over the last drawing, clear lines).
func (p *progress) draw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused {
		return
	}
	names := make([]string, 0, len(p.rows))
	for n := range p.rows {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	if p.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", p.drawn)
	}
	now := time.Now()
	for _, n := range names {
		r := p.rows[n]
		el := r.Elapsed
		if !r.Status.IsTerminal() {
			el = now.Sub(r.Time)
		}
		fmt.Fprintf(&b, "\x1b[2K  %-24s %-18s %6.1fs  %s\n", n, r.Status, el.Seconds(), firstLine(r.Reason))
	}
	p.drawn = len(names)
	io.WriteString(p.w, b.String())
}

// Close stops the live display after a final drawing.
func (p *progress) Close() {
	if p.live {
		close(p.stop)
		<-p.done
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}
