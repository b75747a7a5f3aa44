package riverqueue

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"knit.dev/knit/internal/controller/queuetest"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
)

// TestArgsCarryARunAcrossReplicas: a GitOps request (its environment read
// from a commit's tree) survives the trip through the job's JSON: the
// environment as its revision JSON, from the same folder, and every field.
func TestArgsCarryARunAcrossReplicas(t *testing.T) {
	env, diags := spec.Parse("/repo/envs/app.yaml", "/repo/envs", []byte(`apiVersion: knit.dev/v1
kind: Environment
metadata: {name: app}
spec:
  teamName: shop
  envName: app
  components:
    - name: web
      type: script
      script: {apply: "echo {}"}
`))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	req := knit.RunRequest{RunID: "r1", Kind: engine.KindApply, Env: env, Actor: "alice", Source: "git",
		Reason: "commit", Origin: "file:///repo@abc:envs/app.yaml", Root: "/data/git/abc/envs", Commit: "abc",
		Components: []string{"web"}, AutoApprove: true, Tree: "/data/git/abc"}
	got := roundTrip(t, req, env.ID())
	want, _ := json.Marshal(env)
	have, _ := json.Marshal(got.Env)
	if string(have) != string(want) || got.Env.Dir != env.Dir || got.Env.File != env.File {
		t.Errorf("environment after the trip:\n%s (dir %s)\nwant\n%s (dir %s)", have, got.Env.Dir, want, env.Dir)
	}
	got.Env, req.Env = nil, nil
	if !reflect.DeepEqual(got, req) {
		t.Errorf("request after the trip:\n%+v\nwant\n%+v", got, req)
	}
	// A rollback to a revision (knit rollback --to, a resume of a
	// rollback) keeps its target and the run it resumes.
	back2 := roundTrip(t, knit.RunRequest{RunID: "r2", Kind: engine.KindRollback, EnvRef: "shop/app", To: 3, Resumes: "r0", Actor: "knit-serve"}, "shop/app")
	if back2.To != 3 || back2.Resumes != "r0" || back2.Kind != engine.KindRollback {
		t.Errorf("a rollback after the trip: %+v, want to revision 3 resuming r0", back2)
	}
	if _, err := argsOf(knit.RunRequest{OnEvent: func(engine.Event) {}}, "x/y"); err == nil {
		t.Error("a request with a callback was queued in the database")
	}
}

func TestLockBackoffDoublesUpToAMinute(t *testing.T) {
	for _, c := range []struct {
		meta string
		want time.Duration
	}{{`{}`, 2 * time.Second}, {`{"snoozes": 1}`, 4 * time.Second}, {`{"snoozes": 3}`, 16 * time.Second}, {`{"snoozes": 40}`, time.Minute}} {
		if got := lockBackoff(2*time.Second, []byte(c.meta)); got != c.want {
			t.Errorf("lockBackoff after %s = %v, want %v", c.meta, got, c.want)
		}
	}
}

// roundTrip is req after the trip through a job's JSON.
func roundTrip(t *testing.T, req knit.RunRequest, env string) knit.RunRequest {
	t.Helper()
	a, err := argsOf(req, env)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var back runArgs
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	got, err := back.request()
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestRunRequestCrossesTheQueue: every field of knit.RunRequest a job can
// carry (all but the environment, carried as its revision JSON, and the
// callbacks) survives the trip through the job's JSON unchanged,
// including a field added to RunRequest later: FullRequest sets every
// field there is.
func TestRunRequestCrossesTheQueue(t *testing.T) {
	req := queuetest.FullRequest(t)
	if got := roundTrip(t, req, "shop/app"); !reflect.DeepEqual(got, req) {
		t.Errorf("request after the trip through a River job:\n%+v\nwant\n%+v", got, req)
	}
}
