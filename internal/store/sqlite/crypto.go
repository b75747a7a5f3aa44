package sqlite

import "knit.dev/knit/internal/keyfile"

// newSealer seals sensitive output values: keyfile.SQLiteOutputs, whose
// key is knit.key itself, not a keyfile.Derive subkey, and whose prefix is
// the version byte 1 (values sealed before the key file had other uses
// must still open).
func newSealer(key []byte) (*keyfile.Sealer, error) {
	return keyfile.SQLiteOutputs.Sealer(keyfile.SQLiteOutputs.Key(key))
}

// outputAD is the additional data that ties a sealed output to its row.
func outputAD(env, component, name string) []byte {
	return []byte(env + "\x00" + component + "\x00" + name)
}
