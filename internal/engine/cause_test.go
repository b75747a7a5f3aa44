package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/runner"
)

// TestTheCauseLeadsTheCodeAndIsMasked: a tool's failure whose first error
// diagnostic leads its error (runner.WithCause) is the component's code,
// after the operation, and a secret in it is masked there and in the reason.
func TestTheCauseLeadsTheCodeAndIsMasked(t *testing.T) {
	h := newHarness(t)
	h.r.Hook = func(ctx context.Context, op, comp string) error { return nil }
	cause := runner.WithCause(errors.New("exit status 1\nthe end of stderr"), "Error: token s3cr3t-token rejected by the API")
	h.r.Fail = map[string]map[string]error{"d": {"apply": cause}}
	res, _ := h.e.Apply(context.Background(), parse(t, diamond), engine.Options{Actor: "tester"})
	c := res.Component("d")
	if c.Code != "failed: Error: token (sensitive value) rejected by the API" && !strings.HasSuffix(c.Code, ": Error: token (sensitive value) rejected by the API") {
		t.Errorf("code = %q, want the masked cause", c.Code)
	}
	if strings.Contains(c.Reason, "s3cr3t-token") || !strings.Contains(c.Reason, "exit status 1") {
		t.Errorf("reason = %q, want masked, with the exit status after the cause", c.Reason)
	}
}
