package riverqueue

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

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
	a, err := argsOf(req, env.ID())
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
	want, _ := json.Marshal(env)
	have, _ := json.Marshal(got.Env)
	if string(have) != string(want) || got.Env.Dir != env.Dir || got.Env.File != env.File {
		t.Errorf("environment after the trip:\n%s (dir %s)\nwant\n%s (dir %s)", have, got.Env.Dir, want, env.Dir)
	}
	got.Env, req.Env = nil, nil
	if !reflect.DeepEqual(got, req) {
		t.Errorf("request after the trip:\n%+v\nwant\n%+v", got, req)
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
