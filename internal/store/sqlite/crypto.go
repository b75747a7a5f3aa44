package sqlite

import "knit.dev/knit/internal/keyfile"

// sealedV1 prefixes every sealed output value, so a later key scheme can
// tell its values from these.
var sealedV1 = []byte{1}

// newSealer seals sensitive output values. Its key is knit.key itself, not
// a keyfile.Derive subkey: values sealed before the key file had other uses
// must still open.
func newSealer(key []byte) (*keyfile.Sealer, error) {
	return keyfile.NewPrefixedSealer(key, sealedV1)
}

// outputAD is the additional data that ties a sealed output to its row.
func outputAD(env, component, name string) []byte {
	return []byte(env + "\x00" + component + "\x00" + name)
}
