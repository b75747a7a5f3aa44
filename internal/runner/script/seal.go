package script

import (
	"fmt"

	"knit.dev/knit/internal/keyfile"
	"knit.dev/knit/internal/runner"
)

// secret reports whether c handles secrets: inputs from sensitive outputs,
// or sensitive outputs of its own.
func secret(c runner.Component) bool {
	if len(c.Sensitive) > 0 {
		return true
	}
	for _, o := range c.Def.Outputs {
		if o.Sensitive {
			return true
		}
	}
	return false
}

// canKeep refuses, before any command runs, a component whose files would
// hold secrets that the runner cannot seal.
func (r *Runner) canKeep(c runner.Component) error {
	switch {
	case r.sealErr != nil:
		return fmt.Errorf("seal the work dir's files: %w", r.sealErr)
	case r.sealer == nil && secret(c):
		return errNoKey(c)
	}
	return nil
}

func errNoKey(c runner.Component) error {
	return fmt.Errorf("script component %s handles sensitive values, and this runner has no key to seal them in its work dir", c.Def.Name)
}

// ad binds a sealed file to its component and name.
func ad(c runner.Component, name string) []byte {
	return []byte(c.Env + "\x00" + c.Def.Name + "\x00" + name)
}

// seal encrypts the body of the work dir's file name, when the runner has
// a key.
func (r *Runner) seal(c runner.Component, name string, body []byte) ([]byte, error) {
	if err := r.canKeep(c); err != nil {
		return nil, err
	}
	if r.sealer == nil {
		return body, nil
	}
	return r.sealer.Seal(body, ad(c, name))
}

// open decrypts what seal wrote; a plain file (written without a key, or
// by a knit from before sealing) is read as it is, and sealed on its next
// write.
func (r *Runner) open(c runner.Component, name string, data []byte) ([]byte, error) {
	if !keyfile.IsSealed(data) {
		return data, nil
	}
	if r.sealer == nil {
		return nil, fmt.Errorf("%s is sealed, and this runner has no key to open it", name)
	}
	return r.sealer.Open(data, ad(c, name))
}
