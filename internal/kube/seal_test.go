package kube

import (
	"os"
	"path/filepath"
	"testing"
)

// The engine copies a plan awaiting approval under another name; the copy
// opens with the recorded checksum.
func TestSealedPlanOpensUnderAnotherName(t *testing.T) {
	dir := t.TempDir()
	s := &Sealer{KeyFile: filepath.Join(dir, "key")}
	sum, err := s.Write(filepath.Join(dir, "helm-plan.sealed"), []byte("plan"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "helm-plan.sealed"))
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(dir, "app-20260101T000000-abcdef.sealed")
	if err := os.WriteFile(cp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := s.Read(cp, sum)
	if err != nil || string(got) != "plan" {
		t.Fatalf("read the copy: %q, %v", got, err)
	}
	if err := os.WriteFile(cp, append(b, 0), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(cp, sum); err == nil {
		t.Error("a changed plan was opened")
	}
}
