package notify

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func TestSlackPayload(t *testing.T) {
	rcv := newReceiver(t, nil)
	d := newDispatcher(t, []Sink{{Name: "chat", Kind: SinkSlack, URL: rcv.URL + "/services/T0/B0/x"}}, fastOptions(newLogRecorder()))
	d.Notify(Event{
		Kind: KindDriftFound, Env: "prod", RunID: "r42", Component: "vpc", Actor: "scheduler",
		Summary: "2 resources changed outside knit <!channel> & co",
		Time:    time.Date(2024, 5, 1, 14, 0, 0, 0, time.FixedZone("CEST", 2*60*60)),
		URL:     "https://knit.example/envs/prod?tab=drift|x",
	})
	h := rcv.next(t)
	if sig := h.header.Get(SignatureHeader); sig != "" {
		t.Errorf("a Slack sink without a secret signed its request: %s", sig)
	}

	var msg struct {
		Text   string `json:"text"`
		Blocks []struct {
			Type string `json:"type"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal(h.body, &msg); err != nil {
		t.Fatal(err)
	}
	if msg.Text == "" || len(msg.Blocks) != 2 || msg.Blocks[0].Type != "section" || msg.Blocks[1].Type != "context" {
		t.Fatalf("not a Slack message with text, a section and a context block: %s", h.body)
	}
	if strings.Contains(string(h.body), "<!channel>") {
		t.Errorf("summary was not escaped; it would ping the channel: %s", h.body)
	}

	var pretty bytes.Buffer
	if err := json.Indent(&pretty, h.body, "", "  "); err != nil {
		t.Fatal(err)
	}
	golden(t, "slack-drift-found.golden", pretty.String()+"\n")
}

func TestSlackTitlesCoverEveryKind(t *testing.T) {
	for _, k := range Kinds() {
		msg := newSlackMessage(Event{Kind: k, Env: "dev"})
		if t0 := slackTitles[k]; t0[1] == "" || !strings.HasPrefix(msg.Text, t0[1]+" in dev") {
			t.Errorf("kind %s: text %q has no title", k, msg.Text)
		}
	}
}

func TestSlackSummaryIsTruncated(t *testing.T) {
	msg := newSlackMessage(Event{Kind: KindRunFailed, Env: "dev", Summary: strings.Repeat("é", 5000)})
	if n := len([]rune(msg.Blocks[0].Text.Text)); n > 3000 {
		t.Fatalf("section text has %d characters; Slack rejects more than 3000", n)
	}
	if !strings.HasSuffix(msg.Blocks[0].Text.Text, "…") {
		t.Errorf("truncated summary is not marked with an ellipsis")
	}
}

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run with -update to accept):\n--- got\n%s--- want\n%s", path, got, want)
	}
}
