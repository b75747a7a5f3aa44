package sqlite

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"knit.dev/knit/internal/keyfile"
	"knit.dev/knit/internal/store"
)

// TestOpensOutputsSealedByEarlierKnits: a sensitive output sealed by the
// store's own AES-GCM code of before keyfile.Sealer (0x01, nonce,
// ciphertext; knit.key itself as the key) still opens.
func TestOpensOutputsSealedByEarlierKnits(t *testing.T) {
	// Sealed by that code: "hunter2" for shop/dev's db.password under a
	// knit.key of 32 sevens.
	old, _ := hex.DecodeString("017e6d226d7beadf1e10bbfb2d845f142492bd210519508a473f4c269f50006a7aaea113")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, KeyFile), bytes.Repeat([]byte{7}, keyfile.Size), 0o600); err != nil {
		t.Fatal(err)
	}
	s := openT(t, dir)
	if err := s.PutComponentState(t.Context(), store.ComponentState{Env: "shop/dev", Component: "db", Status: "applied",
		Outputs: map[string]store.OutputValue{"password": {Value: []byte("new"), Sensitive: true}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec(`UPDATE outputs SET value = ? WHERE env = 'shop/dev' AND component = 'db' AND name = 'password'`, old); err != nil {
		t.Fatal(err)
	}
	states, err := s.ComponentStates(t.Context(), "shop/dev")
	if err != nil {
		t.Fatal(err)
	}
	if got := states["db"].Outputs["password"].Value; string(got) != "hunter2" {
		t.Fatalf("db.password = %q, want the value sealed by the old code", got)
	}
}
