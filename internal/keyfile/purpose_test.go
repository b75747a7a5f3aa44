package keyfile_test

import (
	"bytes"
	"encoding/hex"
	"testing"

	"knit.dev/knit/internal/keyfile"
)

// TestPurposesKeepTheirKeys pins, for a fixed knit key, the key and the
// seal prefix of every purpose: a changed label or prefix would leave
// what existing data dirs and databases sealed unreadable.
func TestPurposesKeepTheirKeys(t *testing.T) {
	master := make([]byte, keyfile.Size)
	for i := range master {
		master[i] = byte(i)
	}
	for _, c := range []struct {
		p      keyfile.Purpose
		key    string
		prefix []byte
	}{
		{keyfile.SQLiteOutputs, "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", []byte{1}},
		{keyfile.PostgresStore, "314b4dc091321b4304f470fedcafcedcb443a170cabcd1362fc5af0367fda731", []byte("knit-sealed-v1\n")},
		{keyfile.TofuState, "8b049b90ae8191cbd0e669ec6fd2c980b48ad4f0df128ef7c8aed73f33822c77", nil},
		{keyfile.ScriptRunner, "8f525be0bb294e36755a1bbc6e02ebd01151d7d42f81bb04feda95d9e060dbf2", nil},
		{keyfile.ScriptWorkFiles, "de028e0b41c51a4d25965dc27f55597caea54bb4f738e3e760028de9f1877a34", []byte("knit-sealed-v1\n")},
		{keyfile.ScriptFingerprints, "6d62da4e6863709cfadc713b989a93e12b33577866e79d6790e0fe0d94b77857", nil},
		// knit-kube's plans: their own key file, used as it is.
		{keyfile.KubePlans, "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", []byte{}},
	} {
		if got := hex.EncodeToString(c.p.Key(master)); got != c.key {
			t.Errorf("%s: key %s, want %s", c.p.Use, got, c.key)
		}
		if !bytes.Equal(c.p.Prefix, c.prefix) {
			t.Errorf("%s: prefix %q, want %q", c.p.Use, c.p.Prefix, c.prefix)
		}
	}
	if len(keyfile.Purposes()) != 7 {
		t.Errorf("Purposes lists %d, this test pins 7: pin the new one", len(keyfile.Purposes()))
	}
	for _, p := range []keyfile.Purpose{keyfile.ScriptWorkFiles, keyfile.ScriptFingerprints} {
		got, err := p.Under(keyfile.ScriptRunner, keyfile.ScriptRunner.Key(master))
		if err != nil || !bytes.Equal(got, p.Key(master)) {
			t.Errorf("%s under the script runner's key: %x, %v; want its key", p.Use, got, err)
		}
	}
	if _, err := keyfile.TofuState.Under(keyfile.ScriptRunner, master); err == nil {
		t.Error("the state key derives from the script runner's")
	}
	// What the old sealer sealed opens with the purpose's.
	old, _ := keyfile.NewPrefixedSealer(master, []byte{1})
	sealed, _ := old.Seal([]byte("s3cret"), []byte("ad"))
	sl, err := keyfile.SQLiteOutputs.Sealer(keyfile.SQLiteOutputs.Key(master))
	if err != nil {
		t.Fatal(err)
	}
	if plain, err := sl.Open(sealed, []byte("ad")); err != nil || string(plain) != "s3cret" {
		t.Errorf("the SQLite store's old seal opens as %q, %v", plain, err)
	}
}
