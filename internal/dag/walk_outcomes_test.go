package dag

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
)

var errBoom = errors.New("boom")

func TestWalkOutcomes(t *testing.T) {
	type want struct {
		status Status
		reason string
	}
	ok := want{Succeeded, ""}
	tests := []struct {
		name   string
		edges  []string
		behave map[string]string // vertex -> "fail" | "hold" | "panic"; default succeed
		want   map[string]want
	}{
		{
			name:   "failure skips descendants, unrelated branch completes",
			edges:  []string{"a>b", "b>c", "a>d", "x>y", "y>z"},
			behave: map[string]string{"b": "fail"},
			want: map[string]want{
				"a": ok, "b": {Failed, ""}, "c": {Skipped, "upstream failed: b"},
				"d": ok, "x": ok, "y": ok, "z": ok,
			},
		},
		{
			name:   "transitive skip names the failed vertex",
			edges:  []string{"a>b", "b>c"},
			behave: map[string]string{"a": "fail"},
			want: map[string]want{
				"a": {Failed, ""}, "b": {Skipped, "upstream failed: a"}, "c": {Skipped, "upstream failed: a"},
			},
		},
		{
			name:   "several failures report the first alphabetically",
			edges:  []string{"f2>z", "f1>z", "z>w"},
			behave: map[string]string{"f1": "fail", "f2": "fail"},
			want: map[string]want{
				"f1": {Failed, ""}, "f2": {Failed, ""},
				"z": {Skipped, "upstream failed: f1"}, "w": {Skipped, "upstream failed: f1"},
			},
		},
		{
			name:   "hold leaves descendants waiting",
			edges:  []string{"h>w1", "w1>w2", "h>w3", "r>s"},
			behave: map[string]string{"h": "hold"},
			want: map[string]want{
				"h": {Held, ""}, "w1": {Waiting, "waiting on h"}, "w2": {Waiting, "waiting on h"},
				"w3": {Waiting, "waiting on h"}, "r": ok, "s": ok,
			},
		},
		{
			name:   "waiting names the nearest hold",
			edges:  []string{"h1>m", "m>w", "h2>w"},
			behave: map[string]string{"h1": "hold", "h2": "hold"},
			want: map[string]want{
				"h1": {Held, ""}, "h2": {Held, ""},
				"m": {Waiting, "waiting on h1"}, "w": {Waiting, "waiting on h2"},
			},
		},
		{
			name:   "equally near holds tie alphabetically",
			edges:  []string{"hb>w", "ha>w"},
			behave: map[string]string{"ha": "hold", "hb": "hold"},
			want: map[string]want{
				"ha": {Held, ""}, "hb": {Held, ""}, "w": {Waiting, "waiting on ha"},
			},
		},
		{
			name:   "failure beats hold",
			edges:  []string{"h>w", "f>w", "w>v", "h>u"},
			behave: map[string]string{"h": "hold", "f": "fail"},
			want: map[string]want{
				"h": {Held, ""}, "f": {Failed, ""}, "w": {Skipped, "upstream failed: f"},
				"v": {Skipped, "upstream failed: f"}, "u": {Waiting, "waiting on h"},
			},
		},
		{
			name:   "panic is a failure",
			edges:  []string{"p>q", "r"},
			behave: map[string]string{"p": "panic"},
			want: map[string]want{
				"p": {Failed, ""}, "q": {Skipped, "upstream failed: p"}, "r": ok,
			},
		},
	}
	for _, tt := range tests {
		for _, p := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/parallelism=%d", tt.name, p), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var mu sync.Mutex
					called := map[string]bool{}
					res := build(tt.edges...).Walk(t.Context(), p, func(_ context.Context, v string) error {
						mu.Lock()
						called[v] = true
						mu.Unlock()
						switch tt.behave[v] {
						case "fail":
							return fmt.Errorf("%s: %w", v, errBoom)
						case "hold":
							return fmt.Errorf("%s needs approval: %w", v, ErrHold)
						case "panic":
							panic("kaboom")
						}
						return nil
					})
					if len(res.Vertices) != len(tt.want) {
						t.Errorf("got %d results, want %d", len(res.Vertices), len(tt.want))
					}
					for v, w := range tt.want {
						r := res.Vertices[v]
						if r.Status != w.status || r.Reason != w.reason {
							t.Errorf("%s = {%s %q}, want {%s %q}", v, r.Status, r.Reason, w.status, w.reason)
						}
						// The blocking vertex is data: the one the sentence names.
						blocker := strings.TrimPrefix(strings.TrimPrefix(w.reason, "upstream failed: "), "waiting on ")
						if blocker == w.reason {
							blocker = ""
						}
						if r.Blocker != blocker {
							t.Errorf("%s: Blocker = %q, want %q", v, r.Blocker, blocker)
						}
						ran := r.Status == Succeeded || r.Status == Failed || r.Status == Held
						if called[v] != ran {
							t.Errorf("%s: fn called = %v, status %s", v, called[v], r.Status)
						}
						switch tt.behave[v] {
						case "fail":
							if !errors.Is(r.Err, errBoom) {
								t.Errorf("%s: Err = %v, want wrapping errBoom", v, r.Err)
							}
						case "hold":
							if !errors.Is(r.Err, ErrHold) || !strings.Contains(r.Err.Error(), "approval") {
								t.Errorf("%s: Err = %v, want the held error", v, r.Err)
							}
						case "panic":
							if r.Err == nil || !strings.Contains(r.Err.Error(), "kaboom") {
								t.Errorf("%s: Err = %v, want panic value", v, r.Err)
							}
						}
					}
					if res.Err != nil {
						t.Errorf("res.Err = %v, want nil", res.Err)
					}
				})
			})
		}
	}
}
