package storetest

import (
	"testing"
	"time"

	"knit.dev/knit/internal/store"
)

// testToolProcesses: groups are recorded per environment, oldest first,
// replaced when recorded again, forgotten one by one, and kept whoever
// holds the lock (no run or lock is needed at all).
func testToolProcesses(t *testing.T, s store.Store, c *clock) {
	ctx := t.Context()
	a := store.ToolProcess{RunID: "r1", Env: "team/web", Host: "h1", PGID: 100, Start: "linux:boot:1", StartedAt: at(time.Minute)}
	b := store.ToolProcess{RunID: "r1", Env: "team/web", Host: "h1", PGID: 200}
	other := store.ToolProcess{RunID: "r2", Env: "team/api", Host: "h1", PGID: 300, StartedAt: at(0)}
	must(t, s.RecordToolProcess(ctx, a))
	c.set(at(2 * time.Minute))
	must(t, s.RecordToolProcess(ctx, b))
	must(t, s.RecordToolProcess(ctx, other))
	if err := s.RecordToolProcess(ctx, store.ToolProcess{RunID: "r1", Env: "team/web"}); err == nil {
		t.Error("a process without a PGID was recorded")
	}
	got, err := s.ListToolProcesses(ctx, "team/web")
	must(t, err)
	b.StartedAt = at(2 * time.Minute) // stamped by the store's clock
	equal(t, "tool processes", got, []store.ToolProcess{a, b})

	a.Start, a.StartedAt = "linux:boot:2", at(3*time.Minute)
	must(t, s.RecordToolProcess(ctx, a))
	must(t, s.ForgetToolProcess(ctx, "r1", "h1", 200))
	must(t, s.ForgetToolProcess(ctx, "r1", "h2", 100)) // another host's: none
	must(t, s.ForgetToolProcess(ctx, "nope", "h1", 1))
	got, err = s.ListToolProcesses(ctx, "team/web")
	must(t, err)
	equal(t, "tool processes after replace and forget", got, []store.ToolProcess{a})
	got, err = s.ListToolProcesses(ctx, "team/none")
	must(t, err)
	equal(t, "tool processes of an unknown environment", len(got), 0)
}

// testOutbox: each event takes its environment's next number, is kept once
// per sink in order, and goes when deleted; numbering goes on after every
// entry is gone.
func testOutbox(t *testing.T, s store.Store) {
	ctx := t.Context()
	seq, ids, err := s.AddNotification(ctx, "team/web", []string{"ops", "chat"}, []byte(`{"n":1}`))
	must(t, err)
	equal(t, "first seq", seq, int64(1))
	equal(t, "ids", len(ids), 2)
	seq2, ids2, err := s.AddNotification(ctx, "team/api", []string{"ops"}, []byte(`{"n":2}`))
	must(t, err)
	equal(t, "other env's first seq", seq2, int64(1))
	seq3, ids3, err := s.AddNotification(ctx, "team/web", []string{"ops"}, []byte(`{"n":3}`))
	must(t, err)
	equal(t, "second seq", seq3, int64(2))

	pending, err := s.PendingNotifications(ctx)
	must(t, err)
	want := []store.Notification{
		{ID: ids[0], Sink: "ops", Env: "team/web", Seq: 1, Body: []byte(`{"n":1}`), CreatedAt: at(0)},
		{ID: ids[1], Sink: "chat", Env: "team/web", Seq: 1, Body: []byte(`{"n":1}`), CreatedAt: at(0)},
		{ID: ids2[0], Sink: "ops", Env: "team/api", Seq: 1, Body: []byte(`{"n":2}`), CreatedAt: at(0)},
		{ID: ids3[0], Sink: "ops", Env: "team/web", Seq: 2, Body: []byte(`{"n":3}`), CreatedAt: at(0)},
	}
	equal(t, "pending", pending, want)

	for _, id := range append(append(ids, ids2...), ids3...) {
		must(t, s.DeleteNotification(ctx, id))
	}
	must(t, s.DeleteNotification(ctx, 999999))
	pending, err = s.PendingNotifications(ctx)
	must(t, err)
	equal(t, "pending after delete", len(pending), 0)
	seq, _, err = s.AddNotification(ctx, "team/web", []string{"ops"}, []byte(`{}`))
	must(t, err)
	equal(t, "seq after the outbox emptied", seq, int64(3))
}
