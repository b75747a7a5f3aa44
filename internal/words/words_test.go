package words

import (
	"regexp"
	"testing"
)

// TestEveryComponentStatusHasASeverity: a status added without a place in
// the severity order would roll up as the mildest.
func TestEveryComponentStatusHasASeverity(t *testing.T) {
	for _, s := range ComponentStatuses() {
		if _, ok := severity[s]; !ok {
			t.Errorf("component status %q has no severity", s)
		}
	}
	if len(severity) != len(ComponentStatuses()) {
		t.Errorf("severity ranks %d statuses, ComponentStatuses lists %d", len(severity), len(ComponentStatuses()))
	}
	if WorseStatus(ComponentApplied, ComponentFailed) != ComponentFailed || WorseStatus(ComponentAwaiting, ComponentWaiting) != ComponentAwaiting {
		t.Error("WorseStatus does not pick the more severe")
	}
}

// TestNotifyKindsHaveOneSpelling: every kind is subject.event, each old
// spelling names one of them, and any other word names none.
func TestNotifyKindsHaveOneSpelling(t *testing.T) {
	one := regexp.MustCompile(`^[a-z]+\.[a-z]+(-[a-z]+)*$`)
	for _, k := range NotifyKinds() {
		if got, ok := NotifyKindOf(string(k)); !ok || got != k || !one.MatchString(string(k)) {
			t.Errorf("kind %q: NotifyKindOf = %q, %v", k, got, ok)
		}
	}
	for old, k := range OldNotifySpellings() {
		if got, ok := NotifyKindOf(old); !ok || got != k {
			t.Errorf("old spelling %q: NotifyKindOf = %q, %v, want %q", old, got, ok, k)
		}
	}
	if _, ok := NotifyKindOf("run_failed"); ok {
		t.Error("NotifyKindOf accepts run_failed")
	}
}
