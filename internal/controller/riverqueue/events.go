package riverqueue

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// channel is the NOTIFY channel of runs' events.
const channel = "knit_runs"

// note is one notification: a run's events up to Seq are in the table
// (Last: its end is among them), or it was refused or cancelled before
// it started (Refused says why).
type note struct {
	Run     string `json:"r"`
	Env     string `json:"e"`
	Seq     int64  `json:"s,omitempty"`
	Last    bool   `json:"l,omitempty"`
	Refused string `json:"x,omitempty"`
}

// followPoll is how often a follower reads the table without a
// notification (one lost while the listener reconnected).
const followPoll = 2 * time.Second

// hub is a replica's one LISTEN connection: it hands each notification
// to the queue and wakes the streams following the run. Each time it
// starts listening it calls listening, for what was sent before.
type hub struct {
	pool      *pgxpool.Pool
	log       *slog.Logger
	tell      func(note)
	listening func(context.Context)

	mu        sync.Mutex
	followers map[string]map[chan struct{}]bool
}

func newHub(pool *pgxpool.Pool, log *slog.Logger, tell func(note), listening func(context.Context)) *hub {
	return &hub{pool: pool, log: log, tell: tell, listening: listening, followers: map[string]map[chan struct{}]bool{}}
}

// run listens until ctx ends, connecting again after a failure (and then
// waking every follower: they read what they missed from the table).
func (h *hub) run(ctx context.Context) {
	for ctx.Err() == nil {
		err := h.listen(ctx)
		if ctx.Err() != nil {
			return
		}
		h.log.Warn("run queue: listening for run events; connecting again", "err", err)
		h.wakeAll()
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (h *hub) listen(ctx context.Context) error {
	c, err := h.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	conn := c.Conn()
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		return err
	}
	defer func() { _, _ = conn.Exec(context.Background(), "UNLISTEN *") }()
	h.wakeAll() // anything sent before LISTEN is in the table
	h.listening(ctx)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		var nt note
		if json.Unmarshal([]byte(n.Payload), &nt) != nil {
			continue
		}
		h.tell(nt)
		h.wake(nt.Run)
	}
}

func (h *hub) notify(ctx context.Context, n note) error {
	payload, _ := json.Marshal(n)
	_, err := h.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, string(payload))
	return err
}

// follow registers a wake-up for run id's notifications; stop drops it.
func (h *hub) follow(id string) (wake chan struct{}, stop func()) {
	wake = make(chan struct{}, 1)
	h.mu.Lock()
	if h.followers[id] == nil {
		h.followers[id] = map[chan struct{}]bool{}
	}
	h.followers[id][wake] = true
	h.mu.Unlock()
	return wake, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.followers[id], wake)
		if len(h.followers[id]) == 0 {
			delete(h.followers, id)
		}
	}
}

func (h *hub) wake(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.followers[id] {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

func (h *hub) wakeAll() {
	h.mu.Lock()
	ids := make([]string, 0, len(h.followers))
	for id := range h.followers {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	for _, id := range ids {
		h.wake(id)
	}
}

// notified follows a notification: whoever queued the run here learns it
// started (or why not), and the listeners of ends hear of its end.
func (q *Queue) notified(n note) {
	switch {
	case n.Refused != "":
		q.started(n.Run, refusal(n.Refused))
	default:
		q.started(n.Run, nil)
	}
	if n.Last || n.Refused != "" {
		q.mu.Lock()
		ls := q.ended
		q.mu.Unlock()
		for _, fn := range ls {
			fn(n.Env)
		}
	}
}

// publishBatch bounds the events written in one statement.
const publishBatch = 500

// publish copies run's events into the table as they come, a batch per
// statement with one notification, until its last. The returned channel
// is closed once the last is written (or could not be).
func (q *Queue) publish(run *engine.Run) <-chan struct{} {
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	events := run.Subscribe(0).Channel(ctx)
	go func() {
		defer close(done)
		defer cancel()
		for ev := range events {
			batch := []engine.Event{ev}
		drain:
			for len(batch) < publishBatch {
				select {
				case ev, ok := <-events:
					if !ok {
						break drain
					}
					batch = append(batch, ev)
				default:
					break drain
				}
			}
			if err := q.write(run, batch); err != nil {
				q.log.Warn("run queue: publish run events (the run's record keeps its logs)", "run", run.ID, "err", err)
			}
		}
	}()
	return done
}

// write inserts batch and notifies, in one transaction.
func (q *Queue) write(run *engine.Run, batch []engine.Event) error {
	seqs := make([]int64, len(batch))
	bodies := make([]string, len(batch))
	lasts := make([]bool, len(batch))
	n := note{Run: run.ID, Env: run.Env}
	for i, ev := range batch {
		b, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		seqs[i], bodies[i], lasts[i] = ev.Seq, string(b), ev.Kind == engine.RunFinished
		n.Seq, n.Last = ev.Seq, n.Last || lasts[i]
	}
	payload, _ := json.Marshal(n)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return pgx.BeginFunc(ctx, q.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO knit_run_events (run_id, seq, event, last)
			SELECT $1, s, e::jsonb, l FROM unnest($2::bigint[], $3::text[], $4::bool[]) AS t(s, e, l)
			ON CONFLICT DO NOTHING`, run.ID, seqs, bodies, lasts); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, string(payload))
		return err
	})
}

// Follow streams the events of run id from the first after seq after, as
// the replica executing it writes them, until its last or ctx's end. A
// run whose replica died writes no last event: once its record says it
// is over (the resume that took its lock over recorded it interrupted),
// the stream ends with a run-finished event of its own, from the record,
// naming the run that resumed it. ok is false when the run has no events
// in the database and runs nowhere (not started, or over and pruned), or
// is over without a last event: its record says the rest.
func (q *Queue) Follow(ctx context.Context, id string, after int64) (<-chan engine.Event, bool) {
	var live, last bool
	err := q.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM knit_run_events WHERE run_id = $1)
		OR EXISTS (SELECT 1 FROM river_job WHERE kind = $2 AND args->>'run_id' = $1 AND state = 'running'),
		EXISTS (SELECT 1 FROM knit_run_events WHERE run_id = $1 AND last)`,
		id, jobKind).Scan(&live, &last)
	if err != nil || !live {
		return nil, false
	}
	if !last {
		if _, over := q.endedElsewhere(ctx, id); over {
			return nil, false
		}
	}
	out := make(chan engine.Event)
	wake, stop := q.hub.follow(id)
	go func() {
		defer close(out)
		defer stop()
		q.follow(ctx, id, after, wake, out)
	}()
	return out, true
}

// follow sends run id's events after after to out until its last, ctx's
// end, or its record says it is over without one.
func (q *Queue) follow(ctx context.Context, id string, after int64, wake <-chan struct{}, out chan<- engine.Event) {
	send := func(ev engine.Event) bool {
		select {
		case out <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	cursor := after
	for {
		evs, err := q.eventsAfter(ctx, id, cursor)
		if err != nil && ctx.Err() == nil {
			q.log.Warn("run queue: read run events", "run", id, "err", err)
		}
		for _, ev := range evs {
			if !send(ev) {
				return
			}
			cursor = ev.Seq
			if ev.Kind == engine.RunFinished {
				return
			}
		}
		if len(evs) == publishBatch {
			continue
		}
		if err == nil && len(evs) == 0 {
			if r, over := q.endedElsewhere(ctx, id); over {
				if more, err := q.eventsAfter(ctx, id, cursor); err == nil && len(more) > 0 {
					continue // its last came meanwhile
				}
				send(q.endOf(ctx, r, cursor+1))
				return
			}
		}
		select {
		case <-wake:
		case <-time.After(followPoll):
		case <-ctx.Done():
			return
		}
	}
}

// endedElsewhere reads run id's record: over is true once it says the
// run is no longer running (and no job of it is going).
func (q *Queue) endedElsewhere(ctx context.Context, id string) (view.Run, bool) {
	rec, err := q.k.RunRecord(ctx, id)
	if err != nil || rec.Status == store.StatusRunning {
		return view.Run{}, false
	}
	return rec.Run, true
}

// endOf is the run-finished event of run r, which ended without its own
// (its replica died): its record's status, and the run that resumed it.
func (q *Queue) endOf(ctx context.Context, r view.Run, seq int64) engine.Event {
	ev := engine.Event{Seq: seq, Kind: engine.RunFinished, Time: r.FinishedAt, Env: r.Env, RunID: r.ID,
		RunKind: r.Kind, RunStatus: r.Status, Error: r.Error}
	var by string
	err := q.pool.QueryRow(ctx, `SELECT args->>'run_id' FROM river_job WHERE kind = $1 AND args->>'resumes' = $2
		ORDER BY id DESC LIMIT 1`, jobKind, r.ID).Scan(&by)
	if err == nil && by != "" {
		ev.Error = strings.TrimSpace(ev.Error + "; the replica running it stopped: resumed by run " + by)
		ev.Error = strings.TrimPrefix(ev.Error, "; ")
	}
	return ev
}

func (q *Queue) eventsAfter(ctx context.Context, id string, after int64) ([]engine.Event, error) {
	rows, err := q.pool.Query(ctx, `SELECT event FROM knit_run_events WHERE run_id = $1 AND seq > $2
		ORDER BY seq LIMIT $3`, id, after, publishBatch)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (engine.Event, error) {
		var ev engine.Event
		var raw []byte
		if err := r.Scan(&raw); err != nil {
			return ev, err
		}
		return ev, json.Unmarshal(raw, &ev)
	})
}
