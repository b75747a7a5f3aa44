package keyfile

import (
	"fmt"
	"slices"
)

// Purpose is one use of a key of knit's: what it keys, the labels its key
// is derived with from knit's key (knit.key: through each label in turn,
// with Derive; none: knit's key itself), and the prefix of what its
// Sealer seals. Purposes is every one of them, the one table of knit's
// keys. Never change a label or prefix in use: what was sealed under it
// would no longer open (TestPurposesKeepTheirKeys pins them).
type Purpose struct {
	Use    string
	Labels []string
	// Prefix starts each sealed value (sealMagic for the newer formats;
	// the older keep theirs, so what they sealed still opens).
	Prefix []byte
	// File, when set, is a key file of its own under the data dir
	// (LoadFile), in place of knit.key.
	File string
}

// The purposes, as Purposes lists them.
var (
	// SQLiteOutputs: knit.key itself, since its values were sealed
	// before the key file had other uses.
	SQLiteOutputs = Purpose{Use: "the SQLite store's sensitive outputs", Prefix: []byte{1}}
	// PostgresStore seals every replica's sensitive outputs, Terraform
	// state and saved plans in the database.
	PostgresStore = Purpose{Use: "the PostgreSQL store's sensitive outputs, Terraform state and saved plans",
		Labels: []string{"knit/postgres-store-outputs/v1"}, Prefix: sealMagic}
	// TofuState is OpenTofu's state and plan encryption key
	// (TF_ENCRYPTION) and the terraform runner's fingerprints' key.
	TofuState = Purpose{Use: "OpenTofu's state and plan encryption, terraform fingerprints", Labels: []string{"opentofu state and plans"}}
	// ScriptRunner is the key the script runner is handed; it derives
	// the two below from it.
	ScriptRunner       = Purpose{Use: "the script runner's key", Labels: []string{"script work files"}}
	ScriptWorkFiles    = Purpose{Use: "script components' saved plans and outputs in their work dirs", Labels: []string{"script work files", "script work files"}, Prefix: sealMagic}
	ScriptFingerprints = Purpose{Use: "script components' fingerprints", Labels: []string{"script work files", "script fingerprints"}}
	// KubePlans: knit-kube's plan files, under a key file of its own
	// (it may run where knit.key is not), sealed with no prefix, the
	// format those plans always had.
	KubePlans = Purpose{Use: "knit-kube's plan files (helm, manifests)", File: "keys/kube-plans.key", Prefix: []byte{}}
)

// Purposes is every key knit uses.
func Purposes() []Purpose {
	return []Purpose{SQLiteOutputs, PostgresStore, TofuState, ScriptRunner, ScriptWorkFiles, ScriptFingerprints, KubePlans}
}

// Key is p's key from key, knit's key (or p.File's key, for a purpose
// with a file of its own).
func (p Purpose) Key(key []byte) []byte {
	for _, l := range p.Labels {
		key = Derive(key, l)
	}
	return key
}

// Under is p's key from parentKey, the key of parent, a purpose whose
// labels p's begin with: for a part handed parent's key only (the script
// runner derives its work files' key from its own).
func (p Purpose) Under(parent Purpose, parentKey []byte) ([]byte, error) {
	if len(parent.Labels) > len(p.Labels) || !slices.Equal(p.Labels[:len(parent.Labels)], parent.Labels) {
		return nil, fmt.Errorf("%s: not derived from %s", p.Use, parent.Use)
	}
	for _, l := range p.Labels[len(parent.Labels):] {
		parentKey = Derive(parentKey, l)
	}
	return parentKey, nil
}

// Sealer seals with key, p's own (from Key or Under), and p's prefix.
func (p Purpose) Sealer(key []byte) (*Sealer, error) {
	return NewPrefixedSealer(key, p.Prefix)
}
