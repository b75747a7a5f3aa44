package cli

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/view"
)

// A server's component runs become the result a local run renders: plan
// decoded, elapsed time from the record, drift findings, graph order.
func TestRemoteRecordsBecomeALocalResult(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	crs := []view.ComponentRun{
		// The upstream outputs come from the cause, not from the words.
		{Component: "web", Status: "affected by upstream drift", Reason: "takes something drift changes",
			Cause: engine.ReasonUpstreamDrifted.Cause("net.id", "net.ip"), StartedAt: t0, FinishedAt: t0.Add(time.Second)},
		{Component: "net", Status: "drifted", PlanSummary: []byte(`{"add":1,"change":0,"destroy":0,"file":"/data/plan"}`), StartedAt: t0, FinishedAt: t0.Add(2 * time.Second)},
		{Component: "db", Status: "applied", PlanSummary: []byte(`{"change":1}`), StartedAt: t0},
	}
	res := &engine.Result{}
	for _, cr := range crs {
		res.Components = append(res.Components, componentResult(engine.KindDrift, cr))
	}
	sortByGraph(res, []knit.ComponentView{{Name: "web", DependsOn: []string{"net", "db"}}, {Name: "net"}, {Name: "db"}})
	var got []string
	for _, c := range res.Components {
		got = append(got, fmt.Sprintf("%s %s drift=%s by=%v %s plan=%v", c.Name, c.Status, c.Drift, c.AffectedBy, c.Elapsed, c.Plan != nil))
	}
	want := []string{
		"db applied drift=drifted by=[] 0s plan=true",
		"net drifted drift=drifted by=[] 2s plan=true",
		"web affected by upstream drift drift=affected by upstream drift by=[net.id net.ip] 1s plan=false",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got\n%v\nwant\n%v", got, want)
	}
	if res.Components[1].Plan.File != "" || !res.HasDrift() {
		t.Errorf("plan file %q kept, or drift %v lost", res.Components[1].Plan.File, res.HasDrift())
	}
}

// TestStreamedLogsAreBoundedAndGiveWayAfterADrop: the CLI following a run
// through a server keeps at most maxStreamedLog of a component's lines;
// past that, or once the stream dropped events, the recorded log is used.
func TestStreamedLogsAreBoundedAndGiveWayAfterADrop(t *testing.T) {
	l := streamedLogs{}
	l.add(engine.Event{Kind: engine.LogLine, Component: "a", Line: "one"})
	line := strings.Repeat("x", 1000)
	for range maxStreamedLog/len(line) + 10 {
		l.add(engine.Event{Kind: engine.LogLine, Component: "big", Line: line})
	}
	if b := l["a"]; b == nil || b.String() != "one\n" {
		t.Fatalf("a: %v", b)
	}
	if b, seen := l["big"]; !seen || b != nil {
		t.Fatalf("big kept %d bytes", b.Len())
	}
	l.add(engine.Event{Kind: engine.Dropped, Missed: 3})
	l.add(engine.Event{Kind: engine.LogLine, Component: "c", Line: "after"})
	if l["a"] != nil || l["c"] != nil {
		t.Fatal("logs kept after events were dropped")
	}
}
