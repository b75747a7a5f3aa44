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
	w    io.Writer
	live bool
	now  func() time.Time

	mu    sync.Mutex
	start time.Time
	rows  map[string]progressRow
	total int // components the run is expected to touch (0: unknown)
	drawn int
	// paused: a question is on the screen, do not draw over it. Time spent
	// at the question (asked since pausedAt, pausedFor in all) is a
	// person's, not a component's: the timers leave it out.
	paused    bool
	pausedAt  time.Time
	pausedFor time.Duration
	stop      chan struct{}
	done      chan struct{}
}

// progressRow is a component's last event, with the time the run had spent
// at questions when the component started.
type progressRow struct {
	engine.Event
	pausedBefore time.Duration
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w, live: isTerminal(w), now: time.Now, rows: map[string]progressRow{}}
	p.start = p.now()
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
		row.pausedBefore = p.pausedFor
		if p.paused { // started while a question is on the screen
			row.pausedBefore += max(0, ev.Time.Sub(p.pausedAt))
		}
	}
	row.Component, row.Status, row.Reason, row.Elapsed = ev.Component, ev.Status, ev.Reason, ev.Elapsed
	if ev.Status.IsTerminal() {
		row.Elapsed = max(0, ev.Elapsed-(p.pausedFor-row.pausedBefore))
	}
	p.rows[ev.Component] = row
	if !p.live {
		line := fmt.Sprintf("%s %-24s %s", ev.Time.Format("15:04:05"), ev.Component, ev.Status)
		// A skipped component never ran: its time is only the walk's.
		if el := ev.Elapsed.Round(time.Millisecond); ev.Status.IsTerminal() && ev.Status != engine.Skipped && el > 0 {
			line += fmt.Sprintf(" (%s)", el)
		}
		if why := reasonAfter(ev.Status, ev.Reason); why != "" {
			line += ": " + why
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
	if !p.paused {
		p.paused, p.pausedAt = true, p.now()
	}
}

// Resume draws again, as a fresh table below whatever was printed meanwhile.
func (p *progress) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused {
		p.pausedFor += p.now().Sub(p.pausedAt)
	}
	p.paused, p.drawn = false, 0
}

// Expect says how many components the run will show, for the N/M count.
func (p *progress) Expect(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total = n
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
	now, done := p.now(), 0
	for _, r := range p.rows {
		if r.Status.IsTerminal() {
			done++
		}
	}
	fmt.Fprintf(&b, "\x1b[2K  %d/%d components done  %6.1fs\n", done, max(p.total, len(names)),
		(now.Sub(p.start) - p.pausedFor).Seconds())
	for _, n := range names {
		r := p.rows[n]
		el := r.Elapsed
		if !r.Status.IsTerminal() {
			el = max(0, now.Sub(r.Time)-(p.pausedFor-r.pausedBefore))
		}
		fmt.Fprintf(&b, "\x1b[2K  %-24s %-18s %6.1fs  %s\n", n, r.Status, el.Seconds(), reasonAfter(r.Status, r.Reason))
	}
	p.drawn = len(names) + 1
	io.WriteString(p.w, b.String())
}

// Close stops the live display after a final drawing.
func (p *progress) Close() {
	if p.live {
		close(p.stop)
		<-p.done
	}
}

// reasonAfter is a component's reason as shown right after its status: its
// first line, without the status repeated ("skipped: db failed" after
// "skipped" is "db failed").
func reasonAfter(st engine.Status, reason string) string {
	return firstLine(strings.TrimPrefix(reason, string(st)+": "))
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}
