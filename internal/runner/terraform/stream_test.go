package terraform

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"knit.dev/knit/internal/runner"
)

// Lines as OpenTofu v1.12.6 writes them (plan -json, apply -json).
const planStream = `{"@level":"info","@message":"OpenTofu 1.12.6","@module":"tofu.ui","type":"version","ui":"1.2"}
{"@level":"info","@message":"terraform_data.r: Refreshing state... [id=0dc8]","type":"refresh_start","hook":{"resource":{"addr":"terraform_data.r"}}}
{"@level":"info","@message":"local_file.f: Drift detected (delete)","type":"resource_drift","change":{"resource":{"addr":"local_file.f"},"action":"delete"}}
{"@level":"info","@message":"terraform_data.u: Plan to update","type":"planned_change","change":{"resource":{"addr":"terraform_data.u"},"action":"update"}}
{"@level":"info","@message":"terraform_data.r: Plan to replace","type":"planned_change","change":{"resource":{"addr":"terraform_data.r"},"action":"replace"}}
{"@level":"info","@message":"data.x.y: Plan to read","type":"planned_change","change":{"resource":{"addr":"data.x.y"},"action":"read"}}
{"@level":"info","@message":"local_file.f: Plan to create","type":"planned_change","change":{"resource":{"addr":"local_file.f"},"action":"create"}}
{"@level":"info","@message":"Plan: 2 to add, 1 to change, 1 to destroy.","type":"change_summary","changes":{"add":2,"change":1,"import":0,"remove":1,"forget":0,"operation":"plan"}}
{"@level":"info","@message":"Outputs: 3","type":"outputs","outputs":{"k":{"sensitive":false,"action":"update"},"o":{"sensitive":false,"action":"noop"},"s":{"sensitive":true,"action":"create"}}}`

func TestStreamPlan(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	s := newStream(&log)
	// Written in odd pieces, as a pipe may deliver it.
	for i := 0; i < len(planStream); i += 37 {
		_, _ = s.Write([]byte(planStream[i:min(i+37, len(planStream))]))
	}
	s.flush()
	want := runner.Plan{
		Add: 2, Change: 1, Destroy: 1,
		Resources: []runner.ResourceChange{
			{Address: "data.x.y", Action: runner.ActionRead},
			{Address: "local_file.f", Action: runner.ActionCreate},
			{Address: "terraform_data.r", Action: runner.ActionReplace},
			{Address: "terraform_data.u", Action: runner.ActionUpdate},
		},
		OutputChanges: []string{"k", "s"},
	}
	if got := s.plan(false); !reflect.DeepEqual(got, want) {
		t.Errorf("plan = %+v\nwant %+v", got, want)
	}
	drift := s.plan(true)
	if drift.Destroy != 1 || len(drift.Resources) != 1 || drift.Resources[0].Address != "local_file.f" {
		t.Errorf("refresh-only plan = %+v, want the drifted delete", drift)
	}
	if !strings.Contains(log.String(), "Plan: 2 to add, 1 to change, 1 to destroy.\n") || strings.Contains(log.String(), "{") {
		t.Errorf("log should hold the messages and no JSON:\n%s", log.String())
	}
	p := s.plan(false)
	if !needsShow(&p, runner.PlanOptions{Attributes: true}) || needsShow(&p, runner.PlanOptions{}) {
		t.Error("needsShow: attribute names of an update need show -json; nothing else asked, none")
	}
	if empty := (runner.Plan{}); needsShow(&empty, runner.PlanOptions{Attributes: true, KnownOutputs: true}) {
		t.Error("needsShow: a plan without changes never needs show -json")
	}
}

func TestStreamApplyOutputsAndErrors(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	s := newStream(&log)
	_, _ = s.Write([]byte(`{"@message":"Outputs: 2","type":"outputs","outputs":{"n":{"sensitive":false,"type":"number","value":3},"l":{"sensitive":false,"type":["tuple",["string"]],"value":["a"]}}}` + "\n"))
	outs, ok, err := s.appliedOutputs()
	want := runner.Outputs{"n": {Value: float64(3)}, "l": {Value: []any{"a"}}}
	if err != nil || !ok || !reflect.DeepEqual(outs, want) {
		t.Errorf("outputs = %v, %v, %v; want %v", outs, ok, err, want)
	}
	_, _ = s.Write([]byte(`{"@message":"Outputs: 1","type":"outputs","outputs":{"s":{"sensitive":true,"type":"string"}}}` + "\n"))
	if _, ok, _ := s.appliedOutputs(); ok {
		t.Error("a redacted sensitive output counted as complete")
	}
	_, _ = s.Write([]byte(`{"@level":"error","@message":"Error: Error acquiring the state lock","type":"diagnostic","diagnostic":{"severity":"error","summary":"Error acquiring the state lock","detail":"Lock Info:\n  ID:        1234\n  Who:       alice@ci\n"}}` + "\n"))
	err = s.explain(errors.New("exit status 1"))
	if l := stateLocked(err); l == nil || l.ID != "1234" || l.Who != "alice@ci" {
		t.Errorf("state lock from the stream's diagnostic: %v (%v)", l, err)
	}
}
