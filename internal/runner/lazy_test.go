package runner_test

import (
	"context"
	"testing"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/fake"
	"knit.dev/knit/internal/spec"
)

// TestLazy: the runner is made on first use, once, and never if unused.
func TestLazy(t *testing.T) {
	made := 0
	newRunner := func() runner.Runner { made++; return &fake.Runner{} }
	unused := runner.Lazy(newRunner)
	_ = unused
	if made != 0 {
		t.Fatalf("made %d runners before any use", made)
	}
	r := runner.Lazy(newRunner)
	c := runner.Component{Def: &spec.Component{Name: "a"}, WorkDir: t.TempDir()}
	for range 3 {
		if _, err := r.Fingerprint(context.Background(), c, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Outputs(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if made != 1 {
		t.Errorf("made %d runners, want 1", made)
	}
}
