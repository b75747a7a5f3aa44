package web

import (
	"testing"

	"knit.dev/knit/internal/knit"
)

func TestComponentStateAndWhy(t *testing.T) {
	waiting := knit.ComponentView{Name: "api", Status: "applied", Code: "waiting: upstream db awaiting approval",
		Reason: "waiting: db awaiting approval by an operator", LastRun: &knit.RunRef{Status: "waiting"}}
	if got := componentState(waiting); got != "waiting" {
		t.Errorf("state of a waiting component = %q", got)
	}
	if got := why(waiting); got != "waiting: db awaiting approval by an operator" {
		t.Errorf("why = %q", got)
	}
	upToDate := knit.ComponentView{Name: "net", Status: "applied", LastRun: &knit.RunRef{Status: "up to date"}}
	if got := componentState(upToDate); got != "applied" || why(upToDate) != "" {
		t.Errorf("an up-to-date component shows %q, why %q", got, why(upToDate))
	}
	for status, tone := range map[string]Tone{"applied": ToneOK, "applying": ToneBusy, "awaiting-approval": ToneAct, "waiting": ToneWait, "failed": ToneBad, "skipped": ToneNeutral} {
		if got := toneOf(status); got != tone {
			t.Errorf("toneOf(%q) = %s, want %s", status, got, tone)
		}
	}
}

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{"/env/a/b": "/env/a/b", "//evil.example/": "/", "https://evil.example": "/", "": "/", "/\\evil": "/",
		"/\t/evil.example": "/", "/\n/evil.example": "/", "/\r/evil": "/", "/\x7f/evil": "/", "/env/a/b?flash=ok#x": "/env/a/b?flash=ok#x"} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}
