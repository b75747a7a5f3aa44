package health

import (
	"context"
	"strconv"
	"time"
)

// Probe takes one measurement. It returns within ctx's deadline, and
// reports a measurement it could not take as PhaseError, not as an error.
type Probe interface {
	Measure(ctx context.Context) Measurement
}

// Check is one health check ready to run.
type Check struct {
	Name     string
	Probe    Probe
	Interval time.Duration
	Timeout  time.Duration
	Limits
}

// Result is a check's verdict and the measurements that led to it.
type Result struct {
	Check        string        `json:"check"`
	Verdict      Verdict       `json:"verdict"`
	Reason       Reason        `json:"reason"`
	Message      string        `json:"message"`
	Measurements []Measurement `json:"measurements"`
}

// Last is the result's last measurement, the evidence a failure is
// reported with (zero when there is none).
func (r Result) Last() Measurement {
	if len(r.Measurements) == 0 {
		return Measurement{}
	}
	return r.Measurements[len(r.Measurements)-1]
}

// Evidence is a measurement's datum as people read it: a status code, a
// query's value, an exit code, or its message.
func (m Measurement) Evidence() string {
	switch {
	case m.StatusCode != 0 && m.Value == nil:
		return "status " + strconv.Itoa(m.StatusCode)
	case m.Value != nil:
		return "value " + strconv.FormatFloat(*m.Value, 'g', -1, 64)
	case m.ExitCode != nil:
		return "exit " + strconv.Itoa(*m.ExitCode)
	}
	return m.Message
}

// Clock is the time a check runs on: Now stamps measurements, After waits
// out intervals. Tests pass one that never sleeps.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now is time.Now.
func (SystemClock) Now() time.Time { return time.Now() }

// After is time.After.
func (SystemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Run takes c's measurements until Assess decides, waiting c.Interval
// between them on clock. When ctx ends first the verdict is Inconclusive
// (reason Cancelled) and the error is ctx's.
func Run(ctx context.Context, clock Clock, c Check) (Result, error) {
	res := Result{Check: c.Name}
	for {
		mctx, cancel := context.WithTimeout(ctx, c.Timeout)
		m := c.Probe.Measure(mctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return cancelled(res, err)
		}
		m.At = clock.Now()
		res.Measurements = append(res.Measurements, m)
		if v, why, msg, done := Assess(c.Limits, res.Measurements); done {
			res.Verdict, res.Reason, res.Message = v, why, msg
			return res, nil
		}
		select {
		case <-ctx.Done():
			return cancelled(res, ctx.Err())
		case <-clock.After(c.Interval):
		}
	}
}

func cancelled(res Result, err error) (Result, error) {
	res.Verdict, res.Reason, res.Message = Inconclusive, ReasonCancelled, "stopped before a verdict: "+err.Error()
	return res, err
}
