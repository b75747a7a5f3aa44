package engine

import "time"

// Event is one change of a component's status during a run, for progress
// displays (CLI, server-sent events).
type Event struct {
	Time      time.Time     `json:"time"`
	RunID     string        `json:"runId"`
	Component string        `json:"component"`
	Status    Status        `json:"status"`
	Reason    string        `json:"reason,omitempty"`
	Elapsed   time.Duration `json:"elapsed,omitempty"`
}

func (e *Engine) emit(ev Event) {
	if e.OnEvent != nil {
		e.OnEvent(ev)
	}
}
