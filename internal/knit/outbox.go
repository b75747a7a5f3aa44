package knit

import (
	"context"
	"encoding/json"
	"fmt"

	"knit.dev/knit/internal/notify"
	"knit.dev/knit/internal/store"
)

// Outbox is where the server's notifications wait until delivered, so
// that a restart sends what a shutdown cut off: the notification
// dispatcher's outbox, kept in the store (each event as its JSON). It is
// the only part of the store a caller is handed, and only as notify's
// port.
func (k *Knit) Outbox() notify.Outbox { return outbox{k.store} }

// outbox keeps the dispatcher's undelivered events in the store, each as
// the event's JSON.
type outbox struct{ s store.Outbox }

func (o outbox) Add(ctx context.Context, ev notify.Event, sinks []string) (uint64, []int64, error) {
	body, err := json.Marshal(ev)
	if err != nil {
		return 0, nil, err
	}
	seq, ids, err := o.s.AddNotification(ctx, ev.Env, sinks, body)
	return uint64(seq), ids, err
}

func (o outbox) Done(ctx context.Context, id int64) error { return o.s.DeleteNotification(ctx, id) }

func (o outbox) Pending(ctx context.Context) ([]notify.Pending, error) {
	ns, err := o.s.PendingNotifications(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]notify.Pending, 0, len(ns))
	for _, n := range ns {
		p := notify.Pending{ID: n.ID, Sink: n.Sink, Seq: uint64(n.Seq)}
		if err := json.Unmarshal(n.Body, &p.Event); err != nil {
			return nil, fmt.Errorf("notification %d of %s: %w", n.ID, n.Env, err)
		}
		out = append(out, p)
	}
	return out, nil
}
